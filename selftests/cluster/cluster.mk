# SPDX-License-Identifier: GPL-2.0
#
# Helpers of dfkv_cluster.sh, included by selftests/Makefile: programs
# linking libdfkv (the static archive, so the VM needs no library path).

CLUSTER_PROGS := dfkv_cluster_client
CLUSTER_GEN := $(addprefix $(OUTPUT)/,$(CLUSTER_PROGS))
LIBDFKV_A := $(REPO)/build/lib/libdfkv.a
# LIBDFKV_LDLIBS: what the static archive needs.
include $(REPO)/lib/sources.mk

all: $(CLUSTER_GEN)

$(OUTPUT)/dfkv_cluster_client: cluster/dfkv_cluster_client.c $(LIBDFKV_A) \
		$(REPO)/lib/dfkv.h $(REPO)/uapi/linux/dfkv.h $(REPO)/lib/sources.mk
	@mkdir -p $(OUTPUT)
	$(CC) $(CFLAGS) -o $@ $< $(LIBDFKV_A) $(LIBDFKV_LDLIBS) -lpthread
