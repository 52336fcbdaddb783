# fuzz_jinja: libFuzzer on the Jinja interpreter for chat templates (a GGUF's
# template is input; clang, STRATA_FUZZ=ON). The interpreter's sources (and
# the chat helpers they use) are compiled into the target so that coverage
# sees them; st_util and cJSON are linked. ctest runs it ~20 s from the
# seeds in corpus/jinja (label fuzz).
if(STRATA_FUZZ)
    file(GLOB ST_FUZZ_JINJA_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/chat/jinja/*.c)
    add_executable(fuzz_jinja ${CMAKE_CURRENT_LIST_DIR}/fuzz_jinja.c ${ST_FUZZ_JINJA_SOURCES}
                   ${PROJECT_SOURCE_DIR}/src/chat/formats/common.c
                   ${PROJECT_SOURCE_DIR}/src/chat/json/json.c)
    target_include_directories(fuzz_jinja PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_compile_options(fuzz_jinja PRIVATE -fsanitize=fuzzer,address,undefined
                           -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
    target_link_options(fuzz_jinja PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_jinja PRIVATE st_tok st_util st_warnings PkgConfig::CJSON)
    set(ST_FUZZ_JINJA_SCRATCH ${CMAKE_CURRENT_BINARY_DIR}/fuzz_jinja_corpus)
    file(MAKE_DIRECTORY ${ST_FUZZ_JINJA_SCRATCH})
    add_test(NAME fuzz_jinja
             COMMAND fuzz_jinja -max_total_time=20 -max_len=8192 -rss_limit_mb=2048
                     -timeout=10 ${ST_FUZZ_JINJA_SCRATCH} ${CMAKE_CURRENT_LIST_DIR}/corpus/jinja)
    set_tests_properties(fuzz_jinja PROPERTIES LABELS fuzz TIMEOUT 120)
endif()
