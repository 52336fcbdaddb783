# fuzz_messages_request: libFuzzer on POST /v1/messages bodies
# (messages_request.c, Anthropic's Messages API translated onto the chat
# parser; messages_reply.c for the error body). clang, -DSTRATA_FUZZ=ON;
# built like fuzz_responses_request. ctest runs it ~20 s from the committed
# seeds (label fuzz).
if(STRATA_FUZZ AND STRATA_SERVER)
    set(ST_SRV ${PROJECT_SOURCE_DIR}/src/server)
    add_executable(fuzz_messages_request ${CMAKE_CURRENT_LIST_DIR}/fuzz_messages_request.c
                   ${ST_SRV}/messages_request.c
                   ${ST_SRV}/oai_request.c ${ST_SRV}/oai_fields.c ${ST_SRV}/oai_text.c
                   ${ST_SRV}/oai_sampling.c ${ST_SRV}/oai_tools.c
                   ${ST_SRV}/errors.c ${ST_SRV}/json_out.c ${ST_SRV}/auth.c ${ST_SRV}/random_id.c
                   ${PROJECT_SOURCE_DIR}/src/engine/request.c)
    target_include_directories(fuzz_messages_request PRIVATE ${ST_SRV}
                               ${PROJECT_SOURCE_DIR}/src/engine)
    target_compile_options(fuzz_messages_request PRIVATE -fsanitize=fuzzer,address,undefined
                           -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
    target_link_options(fuzz_messages_request PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_messages_request PRIVATE st_sched st_text st_util
                          PkgConfig::CJSON st_warnings)
    set(ST_FUZZ_MSG_SCRATCH ${CMAKE_CURRENT_BINARY_DIR}/fuzz_messages_corpus)
    file(MAKE_DIRECTORY ${ST_FUZZ_MSG_SCRATCH})
    add_test(NAME fuzz_messages_request
             COMMAND fuzz_messages_request -max_total_time=20 -max_len=8192 -rss_limit_mb=2048
                     -timeout=10 ${ST_FUZZ_MSG_SCRATCH} ${CMAKE_CURRENT_LIST_DIR}/corpus/messages)
    set_tests_properties(fuzz_messages_request PROPERTIES LABELS fuzz TIMEOUT 120)
endif()
