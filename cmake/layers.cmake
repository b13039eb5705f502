# Layers the build enforces (issue 13 item 6).
#
# Each layer is one static library, kappasim_<name>, that links only the layers named in its
# DEPS (and, through them, theirs). A call that runs up a layer (core calling serving) is then an
# undefined reference: the layer's link check (below) links every object of the layer against
# its declared dependencies only. Includes that run up (which need not reach the linker: a
# struct, an inline function, a constant) are caught by cmake/check_layers.cmake (ctest
# layers_check), which reads the manifest written by kappasim_write_layer_manifest().
#
#   kappasim_layer(<name> [SYSTEMC] HOME <folder>... [DEPS <layer>...])
#
# HOME: the folders whose header-only files belong to this layer (a header with a .cpp belongs
# to the layer that compiles the .cpp; a header-only file to its folder's SYSTEMC layer when it
# includes <systemc>/<tlm>, else to its folder's pure layer). SYSTEMC layers link SystemC; pure
# layers never include it. Sources are added by each folder: target_sources(kappasim_<name> ...).
# kappasim_lib (every pure layer) and kappasim_sim (everything) are INTERFACE aggregates for the
# CLI, tests, benchmarks and fuzzers.

add_library(kappasim_lib INTERFACE)
add_library(kappasim_sim INTERFACE)
target_link_libraries(kappasim_sim INTERFACE kappasim_lib)
# Top-level code (apps, tests, bench, fuzz) includes from the source root.
target_include_directories(kappasim_lib INTERFACE "${CMAKE_SOURCE_DIR}")

function(kappasim_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 L "SYSTEMC" "" "HOME;DEPS")
  set(t kappasim_${name})
  add_library(${t} STATIC)
  target_include_directories(${t} PUBLIC "${CMAKE_SOURCE_DIR}")
  foreach(d IN LISTS L_DEPS)
    if(NOT TARGET kappasim_${d})
      message(FATAL_ERROR "layer ${name}: DEPS ${d} is not a layer declared before it")
    endif()
    get_property(dkind GLOBAL PROPERTY KAPPASIM_LAYER_${d}_KIND)
    if(NOT L_SYSTEMC AND dkind STREQUAL "systemc")
      message(FATAL_ERROR "layer ${name} is pure but DEPS ${d} is a SYSTEMC layer: "
                          "declare ${name} SYSTEMC (kappasim_lib must stay free of SystemC)")
    endif()
    target_link_libraries(${t} PUBLIC kappasim_${d})
  endforeach()
  if(L_SYSTEMC)
    target_link_libraries(${t} PUBLIC kappasim::systemc)
    target_compile_definitions(${t} PUBLIC SC_INCLUDE_DYNAMIC_PROCESSES)
    target_link_libraries(kappasim_sim INTERFACE ${t})
    set(kind systemc)
  else()
    target_link_libraries(kappasim_lib INTERFACE ${t})
    set(kind pure)
    if(KAPPASIM_FUZZ)  # libFuzzer coverage on the pure layers, the code the fuzz targets reach
      target_compile_options(${t} PRIVATE -fsanitize=fuzzer-no-link)
    endif()
  endif()
  set_property(GLOBAL APPEND PROPERTY KAPPASIM_LAYERS ${name})
  set_property(GLOBAL PROPERTY KAPPASIM_LAYER_${name}_KIND ${kind})
  set_property(GLOBAL PROPERTY KAPPASIM_LAYER_${name}_HOME ${L_HOME})
  set_property(GLOBAL PROPERTY KAPPASIM_LAYER_${name}_DEPS ${L_DEPS})
endfunction()

# Sources compiled into an OBJECT library (self-registering files, see CMakeLists.txt) that
# belong to <layer>: recorded for the manifest, so layers_check holds their includes to it.
#   kappasim_layer_objects(<object library> <layer> <file>...)
function(kappasim_layer_objects objlib layer)
  if(NOT TARGET kappasim_${layer})
    message(FATAL_ERROR "kappasim_layer_objects: ${layer} is not a declared layer")
  endif()
  target_sources(${objlib} PRIVATE ${ARGN})
  foreach(f IN LISTS ARGN)
    get_filename_component(abs "${f}" ABSOLUTE)
    set_property(GLOBAL APPEND PROPERTY KAPPASIM_LAYER_${layer}_OBJFILES "${abs}")
  endforeach()
endfunction()

# After every folder added its sources: the aggregates must stay empty (a source appended to
# kappasim_lib or kappasim_sim would escape the layer rule), then the manifest for layers_check:
#   layer <name> <pure|systemc> home=<f1,f2> deps=<d1,d2>
#   file <name> <path relative to the source root>
function(kappasim_write_layer_manifest out)
  foreach(agg kappasim_lib kappasim_sim)
    get_target_property(stray ${agg} SOURCES)
    if(stray)
      # Name the layer targets whose HOME is each file's folder, to say where it goes.
      get_property(layers GLOBAL PROPERTY KAPPASIM_LAYERS)
      set(hint "")
      foreach(s IN LISTS stray)
        file(RELATIVE_PATH rel "${CMAKE_SOURCE_DIR}" "${s}")
        get_filename_component(dir "${rel}" DIRECTORY)
        set(cands "")
        foreach(n IN LISTS layers)
          get_property(home GLOBAL PROPERTY KAPPASIM_LAYER_${n}_HOME)
          if(dir IN_LIST home)
            list(APPEND cands kappasim_${n})
          endif()
        endforeach()
        string(REPLACE ";" " or " cands "${cands}")
        string(APPEND hint "\n  ${rel}: ${cands}")
      endforeach()
      message(FATAL_ERROR "${agg} is an aggregate of the layer libraries (cmake/layers.cmake); "
                          "add each file to its folder's layer target instead (the SystemC one if "
                          "it includes <systemc> or a SystemC header):${hint}")
    endif()
  endforeach()
  get_property(layers GLOBAL PROPERTY KAPPASIM_LAYERS)
  set(text "")
  foreach(name IN LISTS layers)
    get_property(kind GLOBAL PROPERTY KAPPASIM_LAYER_${name}_KIND)
    get_property(home GLOBAL PROPERTY KAPPASIM_LAYER_${name}_HOME)
    get_property(deps GLOBAL PROPERTY KAPPASIM_LAYER_${name}_DEPS)
    string(REPLACE ";" "," home "${home}")
    string(REPLACE ";" "," deps "${deps}")
    string(APPEND text "layer ${name} ${kind} home=${home} deps=${deps}\n")
    get_target_property(srcs kappasim_${name} SOURCES)
    get_property(objfiles GLOBAL PROPERTY KAPPASIM_LAYER_${name}_OBJFILES)
    list(APPEND srcs ${objfiles})
    list(FILTER srcs EXCLUDE REGEX "-NOTFOUND$")
    if(srcs)
      foreach(s IN LISTS srcs)
        cmake_path(IS_PREFIX CMAKE_SOURCE_DIR "${s}" NORMALIZE inside)
        if(inside)
          file(RELATIVE_PATH rel "${CMAKE_SOURCE_DIR}" "${s}")
          string(APPEND text "file ${name} ${rel}\n")
        endif()
      endforeach()
    endif()
  endforeach()
  file(WRITE "${out}" "${text}")
endfunction()

# Link check: one tiny executable per layer that links every object of the layer
# (--whole-archive) against the layer's declared dependencies only. A function defined in a
# higher layer (or in no layer) is an undefined reference here, so the build fails.
function(kappasim_add_layer_link_checks)
  get_property(layers GLOBAL PROPERTY KAPPASIM_LAYERS)
  set(main_pure "${CMAKE_BINARY_DIR}/generated/layer_check_main.cpp")
  set(main_sc "${CMAKE_BINARY_DIR}/generated/layer_check_sc_main.cpp")
  file(WRITE "${main_pure}" "// generated by cmake/layers.cmake: links one layer alone\nint main() { return 0; }\n")
  # libsystemc provides main() and calls sc_main(); weak, as core/sim_runner.cpp defines one.
  file(WRITE "${main_sc}" "// generated by cmake/layers.cmake: links one layer alone\nextern \"C\" __attribute__((weak)) int sc_main(int, char**) { return 0; }\n")
  foreach(name IN LISTS layers)
    get_property(kind GLOBAL PROPERTY KAPPASIM_LAYER_${name}_KIND)
    set(t layer_link_check_${name})
    if(kind STREQUAL "systemc")
      add_executable(${t} "${main_sc}")
    else()
      add_executable(${t} "${main_pure}")
    endif()
    target_link_libraries(${t} PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,kappasim_${name}>")
    set_target_properties(${t} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/layer_checks")
  endforeach()
endfunction()
