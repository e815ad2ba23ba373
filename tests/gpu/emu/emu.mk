# tests/gpu/emu/emu.mk — builds build/tests/gpu/emu/parity-emulated: the CUDA
# kernels of cuda/*.cu run on the CPU by a small emulator and checked against
# the CPU backend with tests/gpu/parity.c's own checks (tests/run.sh:
# cuda-kernels-emulated; docs/CUDA.md). Included by the top-level Makefile
# after LIB_OBJ is set; built with or without nvcc (USE_CUDA does not apply).
#
# Nothing of the kernels or of parity.c is copied here: at build time
# launches.py rewrites each cuda/*.cu (except cuda.cu) into C++ for the
# emulator, and extract.py cuts the memory ops and the backend registration
# out of cuda/cuda.cu and the checks and their sequence out of parity.c. The
# kernels compile with $(CXX) (g++) against the stand-in headers in
# tests/gpu/emu/include, which come first on the include path, ahead of any
# CUDA toolkit. The program links the CPU backend's own objects.

CUEMU := tests/gpu/emu
CUEMU_OBJ := build/obj/$(CUEMU)
CUEMU_GEN := $(CUEMU_OBJ)/gen
CUEMU_BIN := build/tests/gpu/emu/parity-emulated
PYTHON ?= python3

CUEMU_KERNELS := $(basename $(notdir $(filter-out cuda/cuda.cu,$(wildcard cuda/*.cu))))
CUEMU_KERNEL_OBJ := $(CUEMU_KERNELS:%=$(CUEMU_OBJ)/%.o)
CUEMU_C_OBJ := $(patsubst %,$(CUEMU_OBJ)/%.o,parity_emulated fiber launch memory cublas)
CUEMU_INC := $(patsubst %,$(CUEMU_GEN)/%.inc,cuda_backend cuda_register parity_checks parity_sequence)
# the CPU backend (the oracle) and the utilities it needs, as built for the library
CUEMU_CPU_OBJ := $(filter build/obj/src/backend/cpu/%.o build/obj/src/util/util.o,$(LIB_OBJ))

# parity_emulated.c and the emulator's C files: the project's flags, the stand-in headers first
CUEMU_CFLAGS := -I$(CUEMU)/include -I$(CUEMU_GEN) $(CFLAGS) -DNEREUS_CUDA=1 -UNEREUS_NCCL -Icuda
# the kernels: C++17 as nvcc compiles them, with FMA contraction as nvcc's default -fmad=true does
# (where $(ARCH) has FMA; g++ need not contract the same operations)
CUEMU_CXXFLAGS := -O3 $(ARCH) -g -ffp-contract=fast -std=c++17 -Wall -Wextra -Werror -Wno-unused-parameter -MMD -MP \
                 -I$(CUEMU)/include -I$(CUEMU_GEN) -Iinclude -Icuda $(shell mpicc --showme:compile 2>/dev/null)

ifeq ($(shell command -v $(CXX) 2>/dev/null),)
  FOUND += "✗ $(CXX) not found (required: the CPU emulation of the CUDA kernels is C++; make deps)"
  MISSING_REQUIRED := 1
endif

$(CUEMU_GEN)/cuda_backend.inc: cuda/cuda.cu $(CUEMU)/extract.py
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)$(PYTHON) $(CUEMU)/extract.py backend $< $@

$(CUEMU_GEN)/cuda_register.inc: cuda/cuda.cu $(CUEMU)/extract.py
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)$(PYTHON) $(CUEMU)/extract.py register $< $@

$(CUEMU_GEN)/parity_checks.inc: tests/gpu/parity.c $(CUEMU)/extract.py
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)$(PYTHON) $(CUEMU)/extract.py checks $< $@

$(CUEMU_GEN)/parity_sequence.inc: tests/gpu/parity.c $(CUEMU)/extract.py
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)$(PYTHON) $(CUEMU)/extract.py sequence $< $@

$(CUEMU_KERNELS:%=$(CUEMU_GEN)/%.cpp): $(CUEMU_GEN)/%.cpp: cuda/%.cu $(CUEMU)/launches.py
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)$(PYTHON) $(CUEMU)/launches.py $< $@

$(CUEMU_KERNEL_OBJ): $(CUEMU_OBJ)/%.o: $(CUEMU_GEN)/%.cpp $(FLAGS_STAMP)
	@$(if $(Q),echo "  CXX     cuda/$*.cu (emulated)")
	$(Q)$(CXX) $(CUEMU_CXXFLAGS) -c $< -o $@

# the .inc files are order-only here: the .d files name them once they exist
$(CUEMU_OBJ)/backend.o: $(CUEMU)/backend.cpp $(FLAGS_STAMP) | $(CUEMU_INC)
	@$(if $(Q),echo "  CXX     $<")
	$(Q)$(CXX) $(CUEMU_CXXFLAGS) -c $< -o $@

$(CUEMU_C_OBJ): $(CUEMU_OBJ)/%.o: $(CUEMU)/%.c $(FLAGS_STAMP) | $(CUEMU_INC)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CUEMU_CFLAGS) -c $< -o $@

$(CUEMU_BIN): $(CUEMU_C_OBJ) $(CUEMU_OBJ)/backend.o $(CUEMU_KERNEL_OBJ) $(CUEMU_CPU_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(filter-out $(CUDA_LDLIBS),$(LDLIBS)) -lstdc++
