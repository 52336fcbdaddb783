# fuzz_text: libFuzzer on the tokenizer (round trip), the chat templates, and
# the streaming detokenizer + stop-string matcher (clang; STRATA_FUZZ=ON).
# The sources of src/tok, chat, reply and grammar are compiled into the target so that coverage
# sees them; only st_util is linked. ctest runs it ~20 s from the seeds in
# corpus/text (label fuzz).
if(STRATA_FUZZ)
    file(GLOB ST_FUZZ_TEXT_SOURCES CONFIGURE_DEPENDS
         ${PROJECT_SOURCE_DIR}/src/tok/*.c ${PROJECT_SOURCE_DIR}/src/tok/unicode/*.c
         ${PROJECT_SOURCE_DIR}/src/chat/*.c ${PROJECT_SOURCE_DIR}/src/chat/formats/*.c
         ${PROJECT_SOURCE_DIR}/src/chat/json/*.c ${PROJECT_SOURCE_DIR}/src/chat/jinja/*.c
         ${PROJECT_SOURCE_DIR}/src/reply/*.c
         ${PROJECT_SOURCE_DIR}/src/grammar/*.c ${PROJECT_SOURCE_DIR}/src/grammar/*/*.c)
    add_executable(fuzz_text ${CMAKE_CURRENT_LIST_DIR}/fuzz_text.c ${ST_FUZZ_TEXT_SOURCES})
    target_include_directories(fuzz_text PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_compile_options(fuzz_text PRIVATE -fsanitize=fuzzer,address,undefined
                           -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
    target_link_options(fuzz_text PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_text PRIVATE st_util st_warnings PkgConfig::CJSON)
    set(ST_FUZZ_TEXT_SCRATCH ${CMAKE_CURRENT_BINARY_DIR}/fuzz_text_corpus)
    file(MAKE_DIRECTORY ${ST_FUZZ_TEXT_SCRATCH})
    add_test(NAME fuzz_text
             COMMAND fuzz_text -max_total_time=20 -max_len=4096 -rss_limit_mb=2048
                     -timeout=10 ${ST_FUZZ_TEXT_SCRATCH} ${CMAKE_CURRENT_LIST_DIR}/corpus/text)
    set_tests_properties(fuzz_text PROPERTIES LABELS fuzz TIMEOUT 120)
endif()
