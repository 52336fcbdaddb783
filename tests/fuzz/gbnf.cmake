# fuzz_gbnf: libFuzzer on the GBNF compiler and recognizer (the `grammar`
# request field; clang, STRATA_FUZZ=ON). The text module's sources are
# compiled into the target so that coverage sees them; only st_util is
# linked. ctest runs it ~20 s from the seeds in corpus/gbnf (label fuzz).
if(STRATA_FUZZ)
    file(GLOB ST_FUZZ_GBNF_SOURCES CONFIGURE_DEPENDS
         ${PROJECT_SOURCE_DIR}/src/tok/*.c ${PROJECT_SOURCE_DIR}/src/tok/unicode/*.c
         ${PROJECT_SOURCE_DIR}/src/chat/*.c ${PROJECT_SOURCE_DIR}/src/chat/formats/*.c
         ${PROJECT_SOURCE_DIR}/src/chat/json/*.c ${PROJECT_SOURCE_DIR}/src/chat/jinja/*.c
         ${PROJECT_SOURCE_DIR}/src/reply/*.c
         ${PROJECT_SOURCE_DIR}/src/grammar/*.c ${PROJECT_SOURCE_DIR}/src/grammar/*/*.c)
    add_executable(fuzz_gbnf ${CMAKE_CURRENT_LIST_DIR}/fuzz_gbnf.c ${ST_FUZZ_GBNF_SOURCES})
    target_include_directories(fuzz_gbnf PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_compile_options(fuzz_gbnf PRIVATE -fsanitize=fuzzer,address,undefined
                           -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
    target_link_options(fuzz_gbnf PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_gbnf PRIVATE st_util st_warnings PkgConfig::CJSON)
    set(ST_FUZZ_GBNF_SCRATCH ${CMAKE_CURRENT_BINARY_DIR}/fuzz_gbnf_corpus)
    file(MAKE_DIRECTORY ${ST_FUZZ_GBNF_SCRATCH})
    add_test(NAME fuzz_gbnf
             COMMAND fuzz_gbnf -max_total_time=20 -max_len=4096 -rss_limit_mb=2048
                     -timeout=10 ${ST_FUZZ_GBNF_SCRATCH} ${CMAKE_CURRENT_LIST_DIR}/corpus/gbnf)
    set_tests_properties(fuzz_gbnf PROPERTIES LABELS fuzz TIMEOUT 120)
endif()
