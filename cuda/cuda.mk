# cuda/cuda.mk — the CUDA backend's part of the build (issue #8), included by
# the top-level Makefile after NEREUS_CFLAGS/LDLIBS/FOUND are set up.
#
#   USE_CUDA=auto  build the CUDA backend when nvcc is found (PATH or
#                  /usr/local/cuda/bin/nvcc); the binary still runs without a
#                  GPU and then falls back to the CPU backend ([run] backend = auto)
#   USE_CUDA=1     the same, but stop with an error when nvcc is missing
#   USE_CUDA=0     CPU backend only
#   CUDA_ARCH=90   compute capability to build for (sm_XX code plus compute_XX PTX)
#
#   NVCCFLAGS=...  added after the project's nvcc flags (as CFLAGS is for mpicc)
#
# Sets: CUDA_OBJ (objects for build/libnereus.a), CUDA_LDLIBS (for the final
# link, after the archive), NEREUS_CFLAGS += -DNEREUS_CUDA=1 (and
# -DNEREUS_NCCL=1 with NCCL), FOUND += one line per finding.

USE_CUDA ?= auto
CUDA_ARCH ?= 90
CUDA_OBJ :=
CUDA_LDLIBS :=

ifneq ($(USE_CUDA),0)
  NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
  ifeq ($(NVCC),)
    ifeq ($(USE_CUDA),1)
      $(error USE_CUDA=1 but nvcc was not found (neither on PATH nor /usr/local/cuda/bin/nvcc))
    endif
    FOUND += "✗ nvcc not found: CPU backend only (USE_CUDA=1 to require it)"
  else
    CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(realpath $(NVCC)))
    # lib64, or the target directory of x86_64 or of aarch64 server parts (sbsa: GH200)
    CUDA_LIB := $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/targets/x86_64-linux/lib $(CUDA_HOME)/targets/sbsa-linux/lib))
    NVCC_VERSION := $(shell $(NVCC) --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')
    # MPI headers for cuda.cu (local-rank device choice), C API only
    MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null)
    NVCCFLAGS ?=
    NEREUS_NVCCFLAGS := -O3 -lineinfo -std=c++17 -gencode arch=compute_$(CUDA_ARCH),code=sm_$(CUDA_ARCH) \
                 -gencode arch=compute_$(CUDA_ARCH),code=compute_$(CUDA_ARCH) \
                 -Iinclude -Icuda $(MPI_CFLAGS) -DOMPI_SKIP_MPICXX=1 -MMD -MP \
                 -Xcompiler -Wall,-Wextra,-Wno-unused-parameter,-Werror -Werror all-warnings
    NEREUS_CFLAGS += -DNEREUS_CUDA=1 -I$(CUDA_HOME)/include -Icuda
    CUDA_SRC := $(wildcard cuda/*.cu)
    CUDA_OBJ := $(CUDA_SRC:%.cu=build/obj/%.o) build/obj/cuda/comm_cuda.o
    CUDA_LDLIBS := -L$(CUDA_LIB) -Wl,-rpath,$(CUDA_LIB) -lcublas -lcudart -lstdc++
    FOUND += "✓ CUDA backend (nvcc $(NVCC_VERSION), sm_$(CUDA_ARCH); runs on the CPU when no GPU is present)"
    # NCCL: the header and the library, under CUDA_HOME or the system paths
    NCCL_HOME ?=
    NCCL_H := $(firstword $(wildcard $(if $(NCCL_HOME),$(NCCL_HOME)/include/nccl.h) $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h))
    NCCL_SO := $(firstword $(wildcard $(if $(NCCL_HOME),$(NCCL_HOME)/lib/libnccl.so) $(CUDA_LIB)/libnccl.so /usr/lib/$(MULTIARCH)/libnccl.so))
    ifneq ($(and $(NCCL_H),$(NCCL_SO)),)
      NCCL_VERSION := $(shell sed -n 's/^\#define NCCL_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\).*/\2/p' $(NCCL_H) | paste -sd.)
      NEREUS_CFLAGS += -DNEREUS_NCCL=1 -I$(dir $(NCCL_H))
      CUDA_OBJ += build/obj/cuda/nccl_comm.o
      CUDA_LDLIBS := -L$(dir $(NCCL_SO)) -Wl,-rpath,$(dir $(NCCL_SO)) -lnccl $(CUDA_LDLIBS)
      FOUND += "✓ NCCL $(NCCL_VERSION)"
    else
      FOUND += "✗ NCCL not found (nccl.h and libnccl.so): no NCCL communicators"
    endif
  endif
else
  FOUND += "- CUDA backend disabled (USE_CUDA=0)"
endif

build/obj/cuda/%.o: cuda/%.cu $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC    $<")
	$(Q)$(NVCC) $(NEREUS_NVCCFLAGS) $(NVCCFLAGS) -c $< -o $@

-include $(wildcard build/obj/cuda/*.d)
