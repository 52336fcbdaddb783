# fuzz_oai_request: libFuzzer on the server's request parsers (JSON bodies
# of every POST route) and the header parsers (X-LlamaSwap-Priority,
# Authorization, X-Request-Id, Host, Content-Type, Origin, If-None-Match).
# clang, -DSTRATA_FUZZ=ON. The parser sources
# are compiled into the target with coverage instrumentation, with
# src/engine/request.c for st_gen_params_defaults (so the target does not
# pull in the engine and its backends); the priority intake comes from
# st_sched, the json_schema compiler from st_grammar. ctest runs it ~20 s from the committed seeds (label fuzz).
if(STRATA_FUZZ AND STRATA_SERVER)
    set(ST_SRV ${PROJECT_SOURCE_DIR}/src/server)
    add_executable(fuzz_oai_request ${CMAKE_CURRENT_LIST_DIR}/fuzz_oai_request.c
                   ${ST_SRV}/openai/oai_request.c ${ST_SRV}/openai/oai_fields.c
                   ${ST_SRV}/openai/oai_sampling.c ${ST_SRV}/openai/oai_tools.c
                   ${ST_SRV}/llama/oai_text.c ${ST_SRV}/llama/completion_request.c
                   ${ST_SRV}/http/errors.c
                   ${ST_SRV}/http/auth.c ${ST_SRV}/http/random_id.c
                   ${ST_SRV}/http/guard.c ${ST_SRV}/http/cors.c ${ST_SRV}/http/etag.c
                   ${PROJECT_SOURCE_DIR}/src/engine/request.c)
    target_include_directories(fuzz_oai_request PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_compile_options(fuzz_oai_request PRIVATE -fsanitize=fuzzer,address,undefined
                           -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
    target_link_options(fuzz_oai_request PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_oai_request PRIVATE st_sched st_grammar st_util PkgConfig::CJSON
                          st_warnings)
    set(ST_FUZZ_OAI_SCRATCH ${CMAKE_CURRENT_BINARY_DIR}/fuzz_oai_corpus)
    file(MAKE_DIRECTORY ${ST_FUZZ_OAI_SCRATCH})
    add_test(NAME fuzz_oai_request
             COMMAND fuzz_oai_request -max_total_time=20 -max_len=8192 -rss_limit_mb=2048
                     -timeout=10 ${ST_FUZZ_OAI_SCRATCH} ${CMAKE_CURRENT_LIST_DIR}/corpus/oai)
    set_tests_properties(fuzz_oai_request PROPERTIES LABELS fuzz TIMEOUT 120)
endif()
