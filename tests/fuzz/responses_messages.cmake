# fuzz_responses_request and fuzz_messages_request: libFuzzer on POST
# /v1/responses bodies (responses_request.c, OpenAI's Responses API) and
# POST /v1/messages bodies (messages_request.c, Anthropic's Messages API),
# both translated onto the chat parser through translate.c. clang,
# -DSTRATA_FUZZ=ON; built like fuzz_oai_request (server.cmake): the parser
# sources compiled in with coverage, src/engine/request.c for the parameter
# defaults; the Responses target also the store and previous_response_id
# (responses_chain.c, responses_store.c). ctest runs each ~20 s from its
# committed seeds (corpus/responses, corpus/messages; label fuzz).
if(STRATA_FUZZ AND STRATA_SERVER)
    set(ST_SRV ${PROJECT_SOURCE_DIR}/src/server)
    foreach(api responses messages)
        set(target fuzz_${api}_request)
        set(api_dir ${api})
        if(api STREQUAL "messages")
            set(api_dir anthropic)
        endif()
        add_executable(${target} ${CMAKE_CURRENT_LIST_DIR}/${target}.c
                       ${ST_SRV}/${api_dir}/${api}_request.c ${ST_SRV}/openai/translate.c
                       ${ST_SRV}/openai/oai_request.c ${ST_SRV}/openai/oai_fields.c
                       ${ST_SRV}/openai/oai_sampling.c ${ST_SRV}/openai/oai_tools.c
                       ${ST_SRV}/llama/oai_text.c ${ST_SRV}/http/sse.c
                       ${ST_SRV}/http/errors.c ${ST_SRV}/http/auth.c
                       ${ST_SRV}/http/random_id.c ${PROJECT_SOURCE_DIR}/src/engine/request.c)
        if(api STREQUAL "responses")
            target_sources(${target} PRIVATE ${ST_SRV}/responses/responses_chain.c
                           ${ST_SRV}/responses/responses_store.c
                           ${ST_SRV}/responses/responses_store_mem.c
                           ${ST_SRV}/responses/responses_store_outs.c)
        endif()
        target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/src)
        target_compile_options(${target} PRIVATE -fsanitize=fuzzer,address,undefined
                               -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
        target_link_options(${target} PRIVATE -fsanitize=fuzzer,address,undefined)
        target_link_libraries(${target} PRIVATE st_sched st_grammar st_util PkgConfig::CJSON
                              Threads::Threads st_warnings)
        set(scratch ${CMAKE_CURRENT_BINARY_DIR}/fuzz_${api}_corpus)
        file(MAKE_DIRECTORY ${scratch})
        add_test(NAME ${target}
                 COMMAND ${target} -max_total_time=20 -max_len=8192 -rss_limit_mb=2048
                         -timeout=10 ${scratch} ${CMAKE_CURRENT_LIST_DIR}/corpus/${api})
        set_tests_properties(${target} PROPERTIES LABELS fuzz TIMEOUT 120)
    endforeach()
endif()
