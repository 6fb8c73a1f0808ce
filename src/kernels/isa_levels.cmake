# The kernels of this build's architecture, from the one list of ISA levels
# (include/ffn/isa_list.hpp): for each level of the architecture, every file of
# src/kernels/<level>/ compiled with the level's flags and those of the levels it extends —
# but its register_<level>.cpp, which only takes the kernels' addresses and stays baseline —
# and the architecture's detection (src/kernels/<arch>/). Adds them to the target `target`.
function(ffn_add_isa_levels target)
  set(list_file ${PROJECT_SOURCE_DIR}/include/ffn/isa_list.hpp)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${list_file})
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    set(arch X86_64)
    set(arch_dir x86_64)
  else()
    set(arch "")
  endif()

  # The architecture's block of the list: the X(name, extends, "flags", ...) lines after
  # "#define FFN_ISA_LEVELS_<ARCH>(X)", up to the blank line that ends the macro.
  file(READ ${list_file} text)
  set(levels "")
  if(arch)
    string(FIND "${text}" "#define FFN_ISA_LEVELS_${arch}(X)" start)
    if(start LESS 0)
      message(FATAL_ERROR "include/ffn/isa_list.hpp has no FFN_ISA_LEVELS_${arch}")
    endif()
    string(SUBSTRING "${text}" ${start} -1 block)
    string(FIND "${block}" "\n\n" end)
    string(SUBSTRING "${block}" 0 ${end} block)
    string(REGEX MATCHALL "X\\(([a-z0-9_]+), *([a-z0-9_]+), *\"[^\"]*\"" entries "${block}")
    foreach(entry IN LISTS entries)
      string(REGEX MATCH "X\\(([a-z0-9_]+), *([a-z0-9_]+), *\"([^\"]*)\"" _ "${entry}")
      set(level ${CMAKE_MATCH_1})
      set(extends_${level} ${CMAKE_MATCH_2})
      separate_arguments(flags_${level} UNIX_COMMAND "${CMAKE_MATCH_3}")
      list(APPEND levels ${level})
    endforeach()
  endif()

  # The scalar level, everywhere.
  file(GLOB scalar_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/scalar/*.cpp)
  target_sources(${target} PRIVATE ${scalar_sources})
  foreach(level IN LISTS levels)
    # The level's flags, then those of each level it extends, down to scalar.
    set(all_flags ${flags_${level}})
    set(base ${extends_${level}})
    while(NOT base STREQUAL "scalar")
      list(PREPEND all_flags ${flags_${base}})
      set(base ${extends_${base}})
    endwhile()
    file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/${level}/*.cpp)
    if(NOT sources)
      message(FATAL_ERROR "ISA level ${level} (include/ffn/isa_list.hpp) has no sources in src/kernels/${level}/")
    endif()
    target_sources(${target} PRIVATE ${sources})
    foreach(source IN LISTS sources)
      get_filename_component(name ${source} NAME)
      if(name STREQUAL "register_${level}.cpp")
        # Omitted designated initialisers are entries the table inherits (kernels/register.hpp),
        # which GCC 12's -Wextra would report at every table.
        set_source_files_properties(${source} PROPERTIES COMPILE_OPTIONS "-Wno-missing-field-initializers")
      else()
        set_source_files_properties(${source} PROPERTIES COMPILE_OPTIONS "${all_flags}")
      endif()
    endforeach()
  endforeach()
  set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/kernels/scalar/register_scalar.cpp PROPERTIES
    COMPILE_OPTIONS "-Wno-missing-field-initializers")
  if(arch)
    file(GLOB arch_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/${arch_dir}/*.cpp)
    target_sources(${target} PRIVATE ${arch_sources})
  endif()
  string(JOIN " " names scalar ${levels})
  message(STATUS "ffn ISA levels: ${names}")
endfunction()
