# fuzz_embeddings_request: libFuzzer on POST /v1/embeddings bodies
# (embeddings_request.c) and the answers rendered for them
# (embeddings_reply.c). clang, -DSTRATA_FUZZ=ON; built like
# fuzz_oai_request (server.cmake). ctest runs it ~20 s from the committed
# seeds (label fuzz).
if(STRATA_FUZZ AND STRATA_SERVER)
    set(ST_SRV ${PROJECT_SOURCE_DIR}/src/server)
    add_executable(fuzz_embeddings_request ${CMAKE_CURRENT_LIST_DIR}/fuzz_embeddings_request.c
                   ${ST_SRV}/openai/embeddings_request.c ${ST_SRV}/gen/embeddings_reply.c
                   ${ST_SRV}/openai/oai_fields.c ${ST_SRV}/http/errors.c)
    target_include_directories(fuzz_embeddings_request PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_compile_options(fuzz_embeddings_request PRIVATE -fsanitize=fuzzer,address,undefined
                           -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
    target_link_options(fuzz_embeddings_request PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_embeddings_request PRIVATE st_sched st_util PkgConfig::CJSON
                          st_warnings m)
    set(ST_FUZZ_EMBD_SCRATCH ${CMAKE_CURRENT_BINARY_DIR}/fuzz_embeddings_corpus)
    file(MAKE_DIRECTORY ${ST_FUZZ_EMBD_SCRATCH})
    add_test(NAME fuzz_embeddings_request
             COMMAND fuzz_embeddings_request -max_total_time=20 -max_len=8192
                     -rss_limit_mb=2048 -timeout=10 ${ST_FUZZ_EMBD_SCRATCH}
                     ${CMAKE_CURRENT_LIST_DIR}/corpus/embeddings)
    set_tests_properties(fuzz_embeddings_request PROPERTIES LABELS fuzz TIMEOUT 120)
endif()
