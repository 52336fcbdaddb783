# st_warnings: the flags every target of ours compiles with (never edit
# CMAKE_C_FLAGS globally). Linked PRIVATE by each library and executable.
add_library(st_warnings INTERFACE)
target_compile_options(st_warnings INTERFACE
    $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes
        -Wmissing-prototypes -Wvla -Wformat=2 -Wundef -Wno-unused-parameter>)
target_compile_definitions(st_warnings INTERFACE _GNU_SOURCE)
if(STRATA_WERROR)
    target_compile_options(st_warnings INTERFACE $<$<COMPILE_LANGUAGE:C>:-Werror>)
endif()
if(STRATA_NATIVE)
    target_compile_options(st_warnings INTERFACE $<$<COMPILE_LANGUAGE:C>:-march=native>)
endif()
if(STRATA_SANITIZE)
    target_compile_options(st_warnings INTERFACE
        $<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer
        -fno-sanitize-recover=undefined>)
    target_link_options(st_warnings INTERFACE -fsanitize=address,undefined)
endif()
