# Kernel generation wired into the build.
#
#   tq_generate_kernels(OUT_DIR <dir> HEAD_DIMS <d...> BITS <b...> [ISAS <isa...>]
#                       SOURCES_VAR <var>)
#
# Configure time: the generator lists the files it will write (per group) into
# <dir>/generated-outputs.cmake, which is included here; no file(GLOB).
# Build time: tq-codebook writes one JSON per (head dim, whole bits), then one
# add_custom_command per group renders that group's files, depending on the
# generator's Python sources and exactly the templates the group uses.  Files are
# rewritten only when their content changes, so editing one template rebuilds
# only what depends on it.  <var> receives every generated file (sources and
# headers) to add to a target.

find_package(Python3 3.9 REQUIRED COMPONENTS Interpreter)
execute_process(COMMAND ${Python3_EXECUTABLE} -c "import jinja2"
                RESULT_VARIABLE _tq_jinja2_missing OUTPUT_QUIET ERROR_QUIET)
if(_tq_jinja2_missing)
  message(FATAL_ERROR "The kernel generator needs Jinja2 for ${Python3_EXECUTABLE}: "
                      "install it with `${Python3_EXECUTABLE} -m pip install jinja2` "
                      "(or apt-get install python3-jinja2).")
endif()

set(TQ_GENERATOR "${CMAKE_CURRENT_LIST_DIR}/../generator/generate.py")
cmake_path(NORMAL_PATH TQ_GENERATOR)

function(tq_generate_kernels)
  cmake_parse_arguments(ARG "" "OUT_DIR;SOURCES_VAR" "HEAD_DIMS;BITS;ISAS" ${ARGN})
  if(NOT ARG_ISAS)
    set(ARG_ISAS scalar)
  endif()
  if(NOT ARG_HEAD_DIMS OR NOT ARG_BITS)
    message(FATAL_ERROR "tq_generate_kernels: HEAD_DIMS and BITS must not be empty")
  endif()
  list(JOIN ARG_HEAD_DIMS "," dims)
  list(JOIN ARG_BITS "," bits)
  list(JOIN ARG_ISAS "," isas)
  set(generator_args --head-dims ${dims} --bits ${bits} --isas ${isas} --out-dir ${ARG_OUT_DIR})

  set(list_file "${ARG_OUT_DIR}/generated-outputs.cmake")
  execute_process(
    COMMAND ${Python3_EXECUTABLE} ${TQ_GENERATOR} ${generator_args} --list-outputs ${list_file}
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(rc)
    message(FATAL_ERROR "TurboQuant kernel generator rejected the configuration:\n${err}")
  endif()
  include(${list_file})
  # Re-list when the generator changes (the list of outputs may change with it).
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${TQ_GENERATOR_SOURCES})

  set(json_dir "${ARG_OUT_DIR}/codebook-json")
  set(json_files "")
  foreach(d IN LISTS ARG_HEAD_DIMS)
    foreach(b IN LISTS TQ_CODEBOOK_BITS)  # the whole bit widths the rates use
      set(json "${json_dir}/codebook-d${d}-b${b}.json")
      add_custom_command(
        OUTPUT ${json}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${json_dir}
        COMMAND tq-codebook --head-dim ${d} --bits ${b} --format json --output ${json}
        DEPENDS tq-codebook
        COMMENT "Lloyd-Max codebook for head_dim ${d}, ${b} bits"
        VERBATIM)
      list(APPEND json_files ${json})
    endforeach()
  endforeach()

  set(all_outputs "")
  foreach(group IN LISTS TQ_GENERATED_GROUPS)
    set(extra_args "")
    set(extra_deps "")
    if(group STREQUAL "codebook")
      set(extra_args --codebook-dir ${json_dir})
      set(extra_deps ${json_files})
    endif()
    add_custom_command(
      OUTPUT ${TQ_GENERATED_${group}_OUTPUTS}
      COMMAND ${Python3_EXECUTABLE} ${TQ_GENERATOR} ${generator_args} --group ${group} ${extra_args}
      DEPENDS ${TQ_GENERATOR_SOURCES} ${TQ_GENERATED_${group}_TEMPLATES} ${extra_deps}
      COMMENT "Generating TurboQuant ${group} files"
      VERBATIM)
    list(APPEND all_outputs ${TQ_GENERATED_${group}_OUTPUTS})
  endforeach()
  # Each ISA's kernels are compiled with its own flags (and live in its own namespace).
  # GCC's -O3 loop vectorizer takes ~30 s on one fully unrolled scalar score kernel
  # (d = 256, 8 bits) and gains nothing on table lookups: off for those files.
  set(scalar_scores ${TQ_GENERATED_SOURCES_scalar})
  list(FILTER scalar_scores INCLUDE REGEX "/score-[^/]*$")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set_source_files_properties(${scalar_scores} PROPERTIES COMPILE_OPTIONS "-fno-tree-loop-vectorize")
  endif()
  set_source_files_properties(${TQ_GENERATED_SOURCES_avx2} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma")
  set_source_files_properties(${TQ_GENERATED_SOURCES_avx512} PROPERTIES
    COMPILE_OPTIONS "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx2;-mfma")
  set(${ARG_SOURCES_VAR} ${all_outputs} PARENT_SCOPE)
endfunction()
