# SPDX-License-Identifier: GPL-2.0
# libdfkv sources (relative to lib/) and link flags; shared by lib/Makefile
# and selftests/unit/Makefile, which compiles them into each unit test.
LIBDFKV_SRCS := status.c rail.c digest.c identity.c ketama.c wire.c members.c client.c route.c exec.c sg.c keyed.c lease.c peer.c async.c health.c conn.c tcp.c local.c discovery.c http.c curl_load.c record.c rdma.c token.c auth.c
LIBDFKV_LDLIBS := -lcrypto -ljson-c -lrdmacm -libverbs -lnuma
