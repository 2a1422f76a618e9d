# Kernel generation wired into the build, for this project and for engines that
# embed it (from this source tree or from the installed package).
#
#   turboquant_generate_kernels(<target> HEAD_DIMS <d...> BITS <b...> [ISAS <isa...>]
#                               [SCORE_ACCUMULATORS <n>])
#       (ISAS: default the target processor's, generator/isas.py)
#       generates exactly these variants at <target>'s build time and compiles them,
#       with the TurboQuant runtime (registry, KV cache, C and C++ API), into
#       <target>: an engine's own kernel set, with no libturboquant to link.
#
#   tq_generate_kernels(OUT_DIR <dir> HEAD_DIMS <d...> BITS <b...> [ISAS <isa...>]
#                       [SCORE_ACCUMULATORS <n>] NAME <name> SOURCES_VAR <var>
#                       KERNEL_LIBS_VAR <kvar>)
#       the generation step and the kernels' objects (this project's
#       runtime/CMakeLists.txt uses it).
#
# Configure time: the generator lists the files it will write (per group) into
# <dir>/generated-outputs.cmake, which is included here; no file(GLOB).
# Build time: tq-codebook writes one JSON per (head dim, whole bits), then one
# add_custom_command per group renders that group's files, depending on the
# generator's Python sources and exactly the templates the group uses.  Files are
# rewritten only when their content changes, so editing one template rebuilds
# only what depends on it.  <var> receives the generated headers and tables to add
# to a target.  Each ISA's kernel sources compile in an object library of their own,
# <name>_kernels_<isa>, with that ISA's flags and its intrinsics header (<immintrin.h>:
# half of a small kernel's compile time) precompiled once; <kvar> receives their
# names, whose $<TARGET_OBJECTS:...> go into a target.

# The kit: generator, templates, runtime sources and public headers.  In the source
# tree it is the tree itself; TurboQuantConfig.cmake points it at the installed copy.
if(NOT TURBOQUANT_KIT_DIR)
  set(TURBOQUANT_KIT_DIR "${CMAKE_CURRENT_LIST_DIR}/..")
  set(TURBOQUANT_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../runtime/include")
  set(TURBOQUANT_CODEBOOK_TOOL tq-codebook)
endif()
cmake_path(NORMAL_PATH TURBOQUANT_KIT_DIR)
cmake_path(NORMAL_PATH TURBOQUANT_INCLUDE_DIR)
# Global, so that the functions see them from any directory (add_subdirectory users).
set_property(GLOBAL PROPERTY TURBOQUANT_KIT_DIR "${TURBOQUANT_KIT_DIR}")
set_property(GLOBAL PROPERTY TURBOQUANT_INCLUDE_DIR "${TURBOQUANT_INCLUDE_DIR}")
set_property(GLOBAL PROPERTY TURBOQUANT_CODEBOOK_TOOL "${TURBOQUANT_CODEBOOK_TOOL}")
set(TQ_GENERATOR "${TURBOQUANT_KIT_DIR}/generator/generate.py")
set(TQ_RUNTIME_SOURCE_NAMES fa_tq_attend.cpp fa_tq_decode.cpp fa_tq_prefill.cpp fa_tq_attention.cpp fa_tq_cache.cpp fa_tq_checks.cpp fa_tq_chunks.cpp fa_tq_state.cpp
                            fa_tq_threads.cpp fa_tq_serialize.cpp fa_tq_statistics.cpp fa_tq_token.cpp fa_tq_undo.cpp
                            last_error.cpp thread_pool.cpp registry.cpp registry_table.cpp rotation_signs.cpp softmax.cpp
                            attend_ops.cpp turboquant.cpp)
list(TRANSFORM TQ_RUNTIME_SOURCE_NAMES PREPEND "${TURBOQUANT_KIT_DIR}/runtime/src/" OUTPUT_VARIABLE TQ_RUNTIME_SOURCES)
set_property(GLOBAL PROPERTY TURBOQUANT_RUNTIME_SOURCES "${TQ_RUNTIME_SOURCES}")

# Python 3 with Jinja2 runs the generator; only builds that generate need it.
macro(_tq_require_generator_python)
  find_package(Python3 3.9 REQUIRED COMPONENTS Interpreter)
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import jinja2"
                  RESULT_VARIABLE _tq_jinja2_missing OUTPUT_QUIET ERROR_QUIET)
  if(_tq_jinja2_missing)
    message(FATAL_ERROR "The kernel generator needs Jinja2 for ${Python3_EXECUTABLE}: "
                        "install it with `${Python3_EXECUTABLE} -m pip install jinja2` "
                        "(or apt-get install python3-jinja2).")
  endif()
endmacro()

# The ISA table (generator/isas.py) into this scope: TQ_KNOWN_ISAS, TQ_ISA_FLAGS_<isa>,
# TQ_ISA_INTRINSICS_<isa>, TQ_EMULABLE_ISAS (and TQ_ISA_EMULATION_*)
# and TQ_PROCESSOR_ISAS, the ISAs a build for CMAKE_SYSTEM_PROCESSOR generates by default.
macro(tq_load_isa_table)
  _tq_require_generator_python()
  get_property(_tq_kit GLOBAL PROPERTY TURBOQUANT_KIT_DIR)
  set(_tq_isa_file "${CMAKE_BINARY_DIR}/turboquant-isas.cmake")
  execute_process(COMMAND ${Python3_EXECUTABLE} ${_tq_kit}/generator/generate.py --isa-table ${_tq_isa_file}
                          --processor ${CMAKE_SYSTEM_PROCESSOR}
                  RESULT_VARIABLE _tq_rc ERROR_VARIABLE _tq_err)
  if(_tq_rc)
    message(FATAL_ERROR "TurboQuant: the generator could not write its ISA table:\n${_tq_err}")
  endif()
  include(${_tq_isa_file})
  # ISAs run on software intrinsics (TQ_EMULATED_ISAS, generator/isas.py Emulation):
  # their kernels and baselines take the emulation's flags.
  foreach(_tq_isa IN LISTS TQ_EMULATED_ISAS)
    if(NOT _tq_isa IN_LIST TQ_EMULABLE_ISAS)
      message(FATAL_ERROR "TQ_EMULATED_ISAS: '${_tq_isa}' has no emulation (those that have: ${TQ_EMULABLE_ISAS})")
    endif()
    if(NOT _tq_isa IN_LIST TQ_PROCESSOR_ISAS)
      message(FATAL_ERROR "TQ_EMULATED_ISAS: '${_tq_isa}' is emulated on its own architecture only, not ${CMAKE_SYSTEM_PROCESSOR}")
    endif()
    find_path(TQ_EMULATION_INCLUDE_${_tq_isa} ${TQ_ISA_EMULATION_HEADER_${_tq_isa}})
    if(NOT TQ_EMULATION_INCLUDE_${_tq_isa})
      message(FATAL_ERROR "TQ_EMULATED_ISAS: ${_tq_isa}'s emulation needs <${TQ_ISA_EMULATION_HEADER_${_tq_isa}}> "
                          "(SIMDe: apt-get install libsimde-dev, or scripts/setup-debian.sh)")
    endif()
    set(TQ_ISA_FLAGS_${_tq_isa} ${TQ_ISA_EMULATION_FLAGS_${_tq_isa}})
  endforeach()
endmacro()

# The ISAs of TQ_PROCESSOR_ISAS that the build machine's CPU runs (each ISA's CPU check of
# the ISA table, compiled and run at configure time), into <var>: TQ_ISAS=native, for test
# builds whose kernels are only worth compiling where they run here.  Never for a build
# that runs elsewhere; not in a cross build.
function(tq_native_isas var)
  if(CMAKE_CROSSCOMPILING)
    message(FATAL_ERROR "TQ_ISAS=native: a cross build cannot run its probes on its target")
  endif()
  set(native "")
  foreach(isa IN LISTS TQ_PROCESSOR_ISAS)
    set(probe "${CMAKE_BINARY_DIR}/turboquant-native/${isa}.cpp")
    file(WRITE "${probe}" "int main() { return (${TQ_ISA_CPU_CHECK_${isa}}) ? 0 : 1; }\n")
    try_run(runs compiles SOURCES "${probe}" COMPILE_OUTPUT_VARIABLE log)
    if(NOT compiles)
      message(FATAL_ERROR "TQ_ISAS=native: the CPU check of ${isa} does not compile:\n${log}")
    endif()
    if(runs EQUAL 0)
      list(APPEND native ${isa})
    endif()
  endforeach()
  set(${var} ${native} PARENT_SCOPE)
endfunction()

function(tq_generate_kernels)
  cmake_parse_arguments(ARG "" "OUT_DIR;NAME;SOURCES_VAR;KERNEL_LIBS_VAR;SCORE_ACCUMULATORS" "HEAD_DIMS;BITS;ISAS" ${ARGN})
  _tq_require_generator_python()
  if(NOT ARG_SCORE_ACCUMULATORS)
    set(ARG_SCORE_ACCUMULATORS 2)
  endif()
  get_property(kit GLOBAL PROPERTY TURBOQUANT_KIT_DIR)
  get_property(codebook_tool GLOBAL PROPERTY TURBOQUANT_CODEBOOK_TOOL)
  set(generator "${kit}/generator/generate.py")
  tq_load_isa_table()
  if(NOT ARG_ISAS)
    set(ARG_ISAS scalar)
  endif()
  list(REMOVE_DUPLICATES ARG_ISAS)
  foreach(isa IN LISTS ARG_ISAS)
    if(NOT isa IN_LIST TQ_PROCESSOR_ISAS AND isa IN_LIST TQ_KNOWN_ISAS)
      message(FATAL_ERROR "tq_generate_kernels: ISA '${isa}' is not one of ${CMAKE_SYSTEM_PROCESSOR}'s "
                          "(${TQ_PROCESSOR_ISAS}); its files would not compile here")
    endif()
  endforeach()
  if(NOT ARG_HEAD_DIMS OR NOT ARG_BITS)
    message(FATAL_ERROR "tq_generate_kernels: HEAD_DIMS and BITS must not be empty")
  endif()
  if(NOT ARG_NAME OR NOT ARG_SOURCES_VAR OR NOT ARG_KERNEL_LIBS_VAR)
    message(FATAL_ERROR "tq_generate_kernels: NAME, SOURCES_VAR and KERNEL_LIBS_VAR are required")
  endif()
  list(JOIN ARG_HEAD_DIMS "," dims)
  list(JOIN ARG_BITS "," bits)
  list(JOIN ARG_ISAS "," isas)
  set(generator_args --head-dims ${dims} --bits ${bits} --isas ${isas}
                     --score-accumulators ${ARG_SCORE_ACCUMULATORS} --out-dir ${ARG_OUT_DIR})
  file(MAKE_DIRECTORY ${ARG_OUT_DIR})

  set(list_file "${ARG_OUT_DIR}/generated-outputs.cmake")
  execute_process(
    COMMAND ${Python3_EXECUTABLE} ${generator} ${generator_args} --list-outputs ${list_file}
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
        COMMAND ${codebook_tool} --head-dim ${d} --bits ${b} --format json --output ${json}
        DEPENDS ${codebook_tool}
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
      COMMAND ${Python3_EXECUTABLE} ${generator} ${generator_args} --group ${group} ${extra_args}
      DEPENDS ${TQ_GENERATOR_SOURCES} ${TQ_GENERATED_${group}_TEMPLATES} ${extra_deps}
      COMMENT "Generating TurboQuant ${group} files"
      VERBATIM)
    list(APPEND all_outputs ${TQ_GENERATED_${group}_OUTPUTS})
  endforeach()
  # Everything generated exists before any kernel compiles: the kernels include the
  # codebook headers.
  add_custom_target(${ARG_NAME}_generate DEPENDS ${all_outputs})
  # Each ISA's kernels are compiled with its own flags (and live in its own namespace).
  # GCC's -O3 loop vectorizer takes ~30 s on one fully unrolled scalar score kernel
  # (d = 256, 8 bits) and gains nothing on table lookups: off for those files.
  set(scalar_scores ${TQ_GENERATED_SOURCES_scalar})
  list(FILTER scalar_scores INCLUDE REGEX "/score-[^/]*$")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set_source_files_properties(${scalar_scores} PROPERTIES COMPILE_OPTIONS "-fno-tree-loop-vectorize")
  endif()
  get_property(include_dir GLOBAL PROPERTY TURBOQUANT_INCLUDE_DIR)
  set(libs "")
  set(headers ${all_outputs})
  foreach(isa IN LISTS ARG_ISAS)
    list(REMOVE_ITEM headers ${TQ_GENERATED_SOURCES_${isa}})
    set(lib ${ARG_NAME}_kernels_${isa})
    add_library(${lib} OBJECT ${TQ_GENERATED_SOURCES_${isa}})
    add_dependencies(${lib} ${ARG_NAME}_generate)
    target_include_directories(${lib} PRIVATE ${include_dir} ${kit}/runtime ${ARG_OUT_DIR})
    target_compile_features(${lib} PRIVATE cxx_std_20)
    # Byte-identical caches across ISAs: no multiply-add fusing (docs/kernels.md).
    target_compile_options(${lib} PRIVATE ${TQ_ISA_FLAGS_${isa}} -ffp-contract=off)
    foreach(emulated IN LISTS TQ_EMULATED_ISAS)  # as the project's CMakeLists.txt sets for all of it
      string(TOUPPER ${emulated} EMULATED)
      target_compile_definitions(${lib} PRIVATE TQ_EMULATED_${EMULATED}=1)
    endforeach()
    # Position independent, so that the objects serve static and shared libraries alike.
    set_target_properties(${lib} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    if(TQ_ISA_INTRINSICS_${isa})  # the system header alone: GCC 12 warns in intrinsics
      # that reach the kernels through our inline functions from a precompiled header
      target_precompile_headers(${lib} PRIVATE <${TQ_ISA_INTRINSICS_${isa}}>)
    endif()
    list(APPEND libs ${lib})
  endforeach()
  set(${ARG_SOURCES_VAR} ${headers} PARENT_SCOPE)
  set(${ARG_KERNEL_LIBS_VAR} ${libs} PARENT_SCOPE)
endfunction()

function(turboquant_generate_kernels target)
  cmake_parse_arguments(ARG "" "SCORE_ACCUMULATORS" "HEAD_DIMS;BITS;ISAS" ${ARGN})
  if(NOT TARGET ${target})
    message(FATAL_ERROR "turboquant_generate_kernels: '${target}' is not a target")
  endif()
  if(NOT ARG_ISAS)
    tq_load_isa_table()
    set(ARG_ISAS ${TQ_PROCESSOR_ISAS})
  endif()
  get_property(kit GLOBAL PROPERTY TURBOQUANT_KIT_DIR)
  get_property(include_dir GLOBAL PROPERTY TURBOQUANT_INCLUDE_DIR)
  set(out "${CMAKE_CURRENT_BINARY_DIR}/${target}-turboquant")
  tq_generate_kernels(OUT_DIR ${out} HEAD_DIMS ${ARG_HEAD_DIMS} BITS ${ARG_BITS} ISAS ${ARG_ISAS}
                      SCORE_ACCUMULATORS ${ARG_SCORE_ACCUMULATORS} NAME ${target}_turboquant
                      SOURCES_VAR generated KERNEL_LIBS_VAR libs)
  get_property(runtime_sources GLOBAL PROPERTY TURBOQUANT_RUNTIME_SOURCES)
  target_sources(${target} PRIVATE ${generated} ${runtime_sources})
  foreach(lib IN LISTS libs)
    target_sources(${target} PRIVATE $<TARGET_OBJECTS:${lib}>)
  endforeach()
  add_dependencies(${target} ${target}_turboquant_generate)
  # The kernels' own libraries take the target's symbol visibility and link-time
  # optimization as set at this call; they need none of its options or definitions.
  foreach(property CXX_VISIBILITY_PRESET VISIBILITY_INLINES_HIDDEN INTERPROCEDURAL_OPTIMIZATION)
    get_target_property(value ${target} ${property})
    if(NOT value STREQUAL "value-NOTFOUND")
      set_target_properties(${libs} PROPERTIES ${property} "${value}")
    endif()
  endforeach()
  target_include_directories(${target} PUBLIC ${include_dir} PRIVATE ${kit}/runtime ${kit}/runtime/src ${out})
  target_compile_features(${target} PUBLIC cxx_std_20)
  find_package(Threads REQUIRED)  # the cache's attention pool (fa_tq_cache_set_threads)
  target_link_libraries(${target} PRIVATE Threads::Threads)
  # Byte-identical caches across ISAs: no multiply-add fusing (docs/kernels.md).
  set_property(SOURCE ${runtime_sources} APPEND PROPERTY COMPILE_OPTIONS -ffp-contract=off)
endfunction()
