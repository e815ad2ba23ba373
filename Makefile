# Nereus — build.
#
#   make          build bin/nereus (and the tools) with what is installed
#   make deps     install the missing Debian packages (as root), or print the command
#   make run      deps + build + the tiny PPO deck on one rank
#   make test     deps + build + every test (last line: "N passed, N failed")
#   make bench    deps + build + benchmarks (table on stdout, build/bench.txt)
#
# Options: USE_CUDA=auto|0|1 (cuda/cuda.mk), USE_PAPI=auto|0|1,
# USE_HDF5=auto|0|1, ARCH=<gcc -march flags>, NP=<ranks for make run>, V=1.
# Changing an option rebuilds what it affects (objects depend on build/.flags).

SHELL := /bin/bash
.DEFAULT_GOAL := all
CC := mpicc
ARCH ?= -march=x86-64-v3
CFLAGS ?= -O3 $(ARCH) -g
CFLAGS += -fopenmp -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter \
          -Iinclude -MMD -MP
LDLIBS := -lm -fopenmp
USE_PAPI ?= auto
USE_HDF5 ?= auto

# Debian packages a fresh Debian 12 machine needs (build, run, test, plots).
DEB_PACKAGES := openmpi-bin libopenmpi-dev libopenblas-dev libopenblas-openmp-dev pkg-config libhdf5-openmpi-dev hdf5-tools \
                libpapi-dev papi-tools libcjson-dev python3-h5py python3-matplotlib bc procps g++

have_pc = $(shell pkg-config --exists $(1) 2>/dev/null && echo 1)

# OpenBLAS's OpenMP build, so that its threads and those of our non-GEMM
# kernels are one pool: with the pthread build, libgomp's spinning workers and
# OpenBLAS's threads fight over the cores (measured: the 124M step 20% slower).
# Debian installs it beside the pthread build; an rpath makes the loader take
# it rather than the alternatives-managed default libopenblas.so.0.
MULTIARCH := $(shell gcc -print-multiarch 2>/dev/null)
BLAS_OMP_DIR := /usr/lib/$(MULTIARCH)/openblas-openmp
ifneq ($(wildcard $(BLAS_OMP_DIR)/pkgconfig/openblas.pc),)
  BLAS_PC := PKG_CONFIG_PATH=$(BLAS_OMP_DIR)/pkgconfig pkg-config
  BLAS_RPATH := -Wl,-rpath,$(BLAS_OMP_DIR)
  BLAS_KIND := OpenMP build
else
  BLAS_PC := pkg-config
  BLAS_KIND := pthread build: non-GEMM kernels and BLAS threads may contend; make deps installs the OpenMP build
endif
ifeq ($(shell $(BLAS_PC) --exists openblas 2>/dev/null && echo 1),1)
  CFLAGS += $(shell $(BLAS_PC) --cflags openblas)
  LDLIBS += $(shell $(BLAS_PC) --libs openblas) $(BLAS_RPATH)
  FOUND += "✓ OpenBLAS $(shell $(BLAS_PC) --modversion openblas) ($(BLAS_KIND))"
else
  FOUND += "✗ OpenBLAS not found (required: make deps)"
  MISSING_REQUIRED := 1
endif
# cJSON reads Hugging Face model directories (config.json, the safetensors headers)
ifeq ($(call have_pc,libcjson),1)
  CFLAGS += $(shell pkg-config --cflags libcjson)
  LDLIBS += $(shell pkg-config --libs libcjson)
  FOUND += "✓ cJSON $(shell pkg-config --modversion libcjson)"
else
  FOUND += "✗ cJSON not found (required: make deps)"
  MISSING_REQUIRED := 1
endif
ifneq ($(USE_HDF5),0)
  ifeq ($(call have_pc,hdf5-openmpi),1)
    CFLAGS += $(shell pkg-config --cflags hdf5-openmpi) -DNEREUS_HAVE_HDF5=1
    LDLIBS += $(shell pkg-config --libs hdf5-openmpi)
    FOUND += "✓ parallel HDF5 $(shell pkg-config --modversion hdf5-openmpi)"
  else
    FOUND += "✗ parallel HDF5 not found (checkpoints and traces need it: make deps)"
  endif
else
  FOUND += "- parallel HDF5 disabled (USE_HDF5=0)"
endif
ifneq ($(USE_PAPI),0)
  ifeq ($(call have_pc,papi),1)
    CFLAGS += $(shell pkg-config --cflags papi) -DNEREUS_HAVE_PAPI=1
    LDLIBS += $(shell pkg-config --libs papi)
    FOUND += "✓ PAPI $(shell pkg-config --modversion papi)"
  else
    FOUND += "✗ PAPI not found (counters fall back to timers)"
  endif
else
  FOUND += "- PAPI disabled (USE_PAPI=0)"
endif
ifneq ($(shell command -v mpicc 2>/dev/null),)
  FOUND += "✓ Open MPI $(shell mpirun --version 2>/dev/null | head -1 | awk '{print $$NF}') (mpicc)"
else
  FOUND += "✗ mpicc not found (required: make deps)"
  MISSING_REQUIRED := 1
endif
# V=1 shows the full commands
Q := $(if $(V),,@)
FLAGS_STAMP := build/.flags
include cuda/cuda.mk

LIB_SRC := $(wildcard src/util/*.c src/deck/*.c src/backend/cpu/*.c src/backend/*.c src/model/*.c src/emu/*.c \
                      src/ppo/*.c src/task/*.c src/run/*.c src/io/*.c src/transition/*.c src/planner/*.c)
LIB_OBJ := $(LIB_SRC:%.c=build/obj/%.o) $(CUDA_OBJ)
LDLIBS += $(CUDA_LDLIBS)
TEST_PROGS := test_deck test_counters test_backend_grad test_backend_mem test_model test_model_tp test_model_pp test_ppo_pure test_task test_grid test_emu_comms test_comm_device gpu/parity test_ckpt make_llmc test_slabs test_tx_dag test_transition test_planner test_sim
TEST_BIN := $(TEST_PROGS:%=build/tests/%)
TOOLS := bin/nereus-task-tokens bin/nereus-ckpt bin/nereus-trace
# the CPU emulation of the CUDA kernels: build/tests/gpu/emu/parity-emulated (CUEMU_BIN)
include tests/gpu/emu/emu.mk

.PHONY: all build deps run test test-slurm bench clean found
.SECONDARY:
all: build
build: found bin/nereus $(TOOLS) $(TEST_BIN) $(CUEMU_BIN) build/tests/libstall_rename.so build/bench/bench_step build/bench/bench_ckpt build/bench/bench_transition build/bench/sweep_refit

found:
	@for l in $(FOUND); do echo "  $$l"; done
ifeq ($(MISSING_REQUIRED),1)
	@echo "nereus: required libraries are missing; run 'make deps' (or 'make run' / 'make test', which do it)"; exit 1
endif

# Objects depend on a stamp of the flags: changing USE_CUDA, ARCH, ... rebuilds them.
FLAGS_NOW := $(CC) $(CFLAGS) $(LDLIBS) $(NVCCFLAGS)
$(shell mkdir -p build && { [ -f $(FLAGS_STAMP) ] && [ "$$(cat $(FLAGS_STAMP))" = '$(FLAGS_NOW)' ] || echo '$(FLAGS_NOW)' > $(FLAGS_STAMP); })

build/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

build/libnereus.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(Q)ar rcs $@ $^

bin/nereus: build/obj/src/main.o build/libnereus.a
	@mkdir -p bin
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

bin/nereus-%: build/obj/tools/%.o build/libnereus.a
	@mkdir -p bin
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# bin/nereus-trace is several objects: tools/trace.c (the command line) and tools/trace_*.c
bin/nereus-trace: $(patsubst %.c,build/obj/%.o,$(wildcard tools/trace*.c)) build/libnereus.a
	@mkdir -p bin
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

build/tests/test_backend_grad: build/obj/tests/test_backend_grad.o build/obj/tests/ref_ops.o build/libnereus.a
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# the checkpoint SIGKILL test's LD_PRELOAD shim (tests/stall_rename.c): no part of the product
build/tests/libstall_rename.so: tests/stall_rename.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -O2 -Wall -Wextra -fPIC -shared $< -o $@ -ldl

build/tests/%: build/obj/tests/%.o build/libnereus.a
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

build/bench/%: build/obj/tests/bench/%.o build/libnereus.a
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# Installs what is missing when run as root; otherwise prints the command and stops.
deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then echo "deps: all Debian packages present"; exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
	  echo "deps: installing:$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null || \
	    { echo "deps: apt-get failed"; exit 1; }; \
	else \
	  echo "deps: missing Debian packages:$$missing"; \
	  echo "deps: run: sudo apt-get install -y$$missing"; exit 1; \
	fi

NP ?= 1
run: deps
	@$(MAKE) --no-print-directory build
	jobs/local.sh -np $(NP) bin/nereus inputs/tiny.deck

test: deps
	@$(MAKE) --no-print-directory build
	tests/run.sh

# a real one-node Slurm on localhost (munged, slurmctld, slurmd from Debian), sbatch of jobs/slurm.sbatch (root)
test-slurm: deps
	@$(MAKE) --no-print-directory build
	bash tests/slurm/run.sh

bench: deps
	@$(MAKE) --no-print-directory build
	tests/bench/run.sh

clean:
	rm -rf build bin

# every dependency file, so a header change rebuilds whatever includes it (tests/bench, tests/gpu too)
-include $(shell find build/obj -name "*.d" 2>/dev/null)
