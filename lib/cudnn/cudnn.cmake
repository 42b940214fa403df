# The `cudnn` backend (lib/cudnn): cuDNN's SDPA through the header-only cudnn-frontend, with
# cuDNN itself loaded at run time (dlopen), so nvdet links and runs without cuDNN installed.
# Building it needs cuDNN 9's headers (cudnn.h, usually in the CUDA toolkit's include folder) and
# the frontend's headers (cudnn_frontend.h: the include/ folder of the nvidia-cudnn-frontend
# wheel, which .ci/install-deps unpacks). When either is missing the backend is still listed, as
# unavailable with one sentence why; the build never fails for it.
# Included from lib/CMakeLists.txt after the cuda folder, only when the CUDA backends are built:
# defines the folder's target, nvdet_cudnn (with cudnn_registration.cpp, the backend's record,
# in either case; a CPU-only build compiles that file alone).
set(NVDET_CUDNN AUTO CACHE STRING "Build the cudnn backend: AUTO (when headers are found) or OFF")
set_property(CACHE NVDET_CUDNN PROPERTY STRINGS AUTO OFF)
set(NVDET_CUDNN_FRONTEND_INCLUDE_DIR "" CACHE PATH
    "Folder holding cudnn_frontend.h (the include/ folder of the nvidia-cudnn-frontend wheel)")

set(_nvdet_cudnn_reason "")
if(NVDET_CUDNN STREQUAL "OFF")
  set(_nvdet_cudnn_reason "it was configured with -DNVDET_CUDNN=OFF")
else()
  find_path(NVDET_CUDNN_INCLUDE_DIR cudnn_version.h
            HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV CUDNN_INCLUDE_DIR)
  set(_fe_hints ${NVDET_CUDNN_FRONTEND_INCLUDE_DIR} $ENV{NVDET_CUDNN_FRONTEND_DIR}/include
      /usr/local/share/nvdet/cudnn-frontend/include)
  find_path(NVDET_CUDNN_FRONTEND_HEADER_DIR cudnn_frontend.h HINTS ${_fe_hints})
  if(NOT NVDET_CUDNN_INCLUDE_DIR)
    set(_nvdet_cudnn_reason "cuDNN's headers (cudnn_version.h) were not found at build time")
  elseif(NOT NVDET_CUDNN_FRONTEND_HEADER_DIR)
    set(_nvdet_cudnn_reason "the cudnn-frontend headers were not found at build time (set NVDET_CUDNN_FRONTEND_INCLUDE_DIR; .ci/install-deps unpacks them)")
  else()
    file(STRINGS ${NVDET_CUDNN_INCLUDE_DIR}/cudnn_version.h _v REGEX "define CUDNN_(MAJOR|MINOR) ")
    string(REGEX MATCH "CUDNN_MAJOR ([0-9]+)" _m "${_v}")
    set(_major ${CMAKE_MATCH_1})
    string(REGEX MATCH "CUDNN_MINOR ([0-9]+)" _m "${_v}")
    set(_minor ${CMAKE_MATCH_1})
    if(NOT _major OR _major LESS 9)
      set(_nvdet_cudnn_reason "cuDNN ${_major}.${_minor} headers were found, the backend needs cuDNN 9")
    endif()
  endif()
endif()

if(_nvdet_cudnn_reason STREQUAL "")
  message(STATUS "nvdet: cudnn backend ON (cuDNN ${_major}.${_minor} headers, frontend at ${NVDET_CUDNN_FRONTEND_HEADER_DIR})")
  set(_cudnn_sources ${PROJECT_SOURCE_DIR}/lib/cudnn/cudnn_backend.cpp
                     ${PROJECT_SOURCE_DIR}/lib/cudnn/cudnn_graphs.cpp
                     ${PROJECT_SOURCE_DIR}/lib/cudnn/cudnn_library.cpp)
  nvdet_layer(cudnn DEPS cuda SOURCES ${_cudnn_sources}
              ${PROJECT_SOURCE_DIR}/lib/cudnn/cudnn_registration.cpp LIBS CUDA::cudart ${CMAKE_DL_LIBS})
  # The frontend's headers are third-party: -isystem keeps their warnings out of ours. Its bundled
  # JSON library stays out (nvdet uses the system nlohmann-json elsewhere; two copies would clash).
  set_source_files_properties(${_cudnn_sources} TARGET_DIRECTORY nvdet_cudnn PROPERTIES
    COMPILE_OPTIONS "-isystem${NVDET_CUDNN_FRONTEND_HEADER_DIR};-isystem${NVDET_CUDNN_INCLUDE_DIR}"
    COMPILE_DEFINITIONS "NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING;CUDNN_FRONTEND_SKIP_JSON_LIB")
  target_compile_definitions(nvdet_build_facts INTERFACE NVDET_WITH_CUDNN=1)
else()
  message(STATUS "nvdet: cudnn backend OFF: ${_nvdet_cudnn_reason}")
  # The sentence goes through a generated header: a define would split it at ';'.
  string(REPLACE "\"" "'" _reason_text "${_nvdet_cudnn_reason}")
  set(_reason_dir ${CMAKE_CURRENT_BINARY_DIR}/cudnn_generated)
  file(CONFIGURE OUTPUT ${_reason_dir}/cudnn_unavailable_reason.h
       CONTENT "#define NVDET_CUDNN_UNAVAILABLE_REASON \"@_reason_text@\"\n" @ONLY)
  nvdet_layer(cudnn DEPS cuda SOURCES ${PROJECT_SOURCE_DIR}/lib/cudnn/cudnn_unavailable.cpp
              ${PROJECT_SOURCE_DIR}/lib/cudnn/cudnn_registration.cpp)
  target_include_directories(nvdet_cudnn PRIVATE ${_reason_dir})
endif()
