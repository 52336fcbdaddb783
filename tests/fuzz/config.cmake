# fuzz_config: libFuzzer on the YAML config loader (clang; STRATA_FUZZ=ON).
# The config sources are compiled into the target itself so that libFuzzer's
# coverage instrumentation sees the code under test. ctest runs it for ~15 s
# (label fuzz) from the seed corpus in configs/.
if(STRATA_FUZZ AND STRATA_SERVER)
    file(GLOB ST_FUZZ_CONFIG_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/config/*.c)
    add_executable(fuzz_config ${CMAKE_CURRENT_LIST_DIR}/fuzz_config.c ${ST_FUZZ_CONFIG_SOURCES})
    target_include_directories(fuzz_config PRIVATE ${PROJECT_SOURCE_DIR}/src/config)
    target_compile_options(fuzz_config PRIVATE -fsanitize=fuzzer,address,undefined
                           -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
    target_link_options(fuzz_config PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_config PRIVATE st_util PkgConfig::YAML st_warnings)
    set(ST_FUZZ_CONFIG_CORPUS ${CMAKE_CURRENT_BINARY_DIR}/fuzz_config_corpus)
    file(MAKE_DIRECTORY ${ST_FUZZ_CONFIG_CORPUS})
    add_test(NAME fuzz_config
             COMMAND fuzz_config -max_total_time=15 -max_len=4096 -rss_limit_mb=2048
                     ${ST_FUZZ_CONFIG_CORPUS} ${PROJECT_SOURCE_DIR}/configs)
    set_tests_properties(fuzz_config PROPERTIES LABELS fuzz TIMEOUT 120)
endif()
