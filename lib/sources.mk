# SPDX-License-Identifier: GPL-2.0
# libdfkv sources (relative to lib/) and link flags; shared by lib/Makefile
# and selftests/unit/Makefile, which compiles them into each unit test.
LIBDFKV_SRCS := status.c digest.c identity.c ketama.c wire.c members.c client.c async.c health.c conn.c tcp.c local.c discovery.c rdma.c token.c auth.c
LIBDFKV_LDLIBS := -lcrypto -lcurl -ljson-c -lrdmacm -libverbs -lnuma
