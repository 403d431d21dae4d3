# The GPU backend (backend/nvptx, backend/cubin, backend/runtime) as the static
# library fnk_gpu. LLVM's NVPTX components are linked statically so that fnkc
# and fnk run on machines without LLVM (docs: shared/docs/TOOLCHAIN.md); the
# CUDA driver and nvJitLink are loaded with dlopen at run time, so nothing here
# needs a GPU or the CUDA toolkit to build.
find_package(LLVM 22.1 CONFIG REQUIRED HINTS /usr/lib/llvm-22/lib/cmake/llvm)
message(STATUS "fnk GPU backend: LLVM ${LLVM_PACKAGE_VERSION} from ${LLVM_DIR}")

# LLVMSupport's exported interface names shared zlib, zstd and z3; none of them
# exists on the GPU machine. Static zlib/zstd replace the first two; Z3 is only
# referenced by archive members the NVPTX backend never pulls in.
find_library(FNK_LIBZ_STATIC libz.a REQUIRED)
find_library(FNK_LIBZSTD_STATIC libzstd.a REQUIRED)
set_target_properties(LLVMSupport PROPERTIES INTERFACE_LINK_LIBRARIES
  "rt;dl;m;${FNK_LIBZ_STATIC};${FNK_LIBZSTD_STATIC};LLVMDemangle")

llvm_map_components_to_libnames(FNK_LLVM_LIBS
  core support target analysis passes ipo scalaropts instcombine codegen mc
  nvptxcodegen nvptxdesc nvptxinfo)

file(GLOB FNK_GPU_SRCS CONFIGURE_DEPENDS
  ${CMAKE_SOURCE_DIR}/backend/nvptx/*.cpp
  ${CMAKE_SOURCE_DIR}/backend/cubin/*.cpp
  ${CMAKE_SOURCE_DIR}/backend/runtime/*.cpp)
add_library(fnk_gpu STATIC ${FNK_GPU_SRCS})
target_include_directories(fnk_gpu SYSTEM PRIVATE ${LLVM_INCLUDE_DIRS})
target_compile_definitions(fnk_gpu PRIVATE ${LLVM_DEFINITIONS})
target_compile_options(fnk_gpu PRIVATE -fno-char8_t)
target_link_libraries(fnk_gpu PUBLIC fnk_core ${FNK_LLVM_LIBS} ${CMAKE_DL_LIBS})
target_compile_definitions(fnk_gpu PUBLIC FNK_HAVE_GPU=1)

# The tools' GPU paths (fnkc --emit=llvm|ptx|cubin, fnk run --device gpu) and
# libfnk's (fnk_run with FNK_DEVICE_GPU: torch tensors from Python), in the
# one library that travels to the GPU machine with the two launchers: drop
# unused sections, and link with lld when it is there (much faster on the
# static LLVM archives).
target_sources(fnk_tools PRIVATE ${CMAKE_SOURCE_DIR}/tools/GpuEmit.cpp ${CMAKE_SOURCE_DIR}/tools/GpuRun.cpp)
target_link_libraries(fnk_tools PUBLIC fnk_gpu)
target_compile_definitions(fnk_tools PRIVATE FNK_HAVE_GPU=1)
target_compile_options(fnk_core PRIVATE -ffunction-sections -fdata-sections)
target_compile_options(fnk_gpu PRIVATE -ffunction-sections -fdata-sections)
target_compile_options(fnk_tools PRIVATE -ffunction-sections -fdata-sections)
set_target_properties(fnk_gpu PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_link_libraries(libfnk PRIVATE fnk_gpu)
target_compile_definitions(libfnk PRIVATE FNK_HAVE_GPU=1)
target_link_options(libfnk PRIVATE -Wl,--gc-sections)
find_program(FNK_LLD NAMES ld.lld ld.lld-14)
if(FNK_LLD)
  target_link_options(libfnk PRIVATE -fuse-ld=lld -Wl,--icf=all)
endif()
