# End-to-end suites: the real `strata` binary on 127.0.0.1, port 0, with the
# simulated engine, driven over HTTP by Node's built-in test runner (raw
# fetch, the official OpenAI Node SDK and the Anthropic TypeScript SDK,
# pinned in tests/e2e/package.json and package-lock.json) and by curl
# (curl_smoke.sh). sampling.test.mjs and nul.test.mjs serve a synthetic tiny model (strata
# make-model) on the CPU backend instead.
#
# e2e_npm_ci installs the SDKs into tests/e2e/node_modules (git-ignored) as
# a FIXTURES_SETUP fixture of every Node suite. Node or npm missing is a
# failure, not a skip: CI must run these.
if(NOT TARGET strata)
    return()
endif()

set(ST_E2E_DIR ${CMAKE_CURRENT_LIST_DIR})
find_program(ST_NODE node)
find_program(ST_NPM npm)

if(ST_NODE AND ST_NPM)
    add_test(NAME e2e_npm_ci
             COMMAND ${ST_NPM} ci --no-audit --no-fund --loglevel=error
             WORKING_DIRECTORY ${ST_E2E_DIR})
    set_tests_properties(e2e_npm_ci PROPERTIES LABELS e2e TIMEOUT 300
                         FIXTURES_SETUP st_e2e_node)

    # name -> test file; each file starts its own servers
    foreach(suite api errors sdk disconnect priority metrics models concurrency sampling tools
                  cors keepalive cache_prompt shutdown echo infill native mixed score_cache responses
                  thinking embeddings messages grammar glm responses_store
                  security nul epp_metrics render gateway state webui model_names templates slots
                  limits kv_unified llama_flags llama_small llama_seed llama_compat)
        add_test(NAME e2e_${suite}
                 COMMAND ${ST_NODE} --test --test-reporter=spec ${ST_E2E_DIR}/${suite}.test.mjs
                 WORKING_DIRECTORY ${ST_E2E_DIR})
        set_tests_properties(e2e_${suite} PROPERTIES
            LABELS e2e TIMEOUT 180
            FIXTURES_REQUIRED st_e2e_node
            ENVIRONMENT "STRATA_BIN=$<TARGET_FILE:strata>")
    endforeach()
    # The dashboard in Debian's chromium through playwright-core: run as a
    # plain script, which exits 77 (Skipped) when either is missing; a
    # failure leaves its screenshot here, a pass leaves dashboard.png.
    add_test(NAME e2e_dashboard
             COMMAND ${ST_NODE} ${ST_E2E_DIR}/dashboard.test.mjs
             WORKING_DIRECTORY ${ST_E2E_DIR})
    set_tests_properties(e2e_dashboard PROPERTIES
        LABELS e2e TIMEOUT 300 SKIP_RETURN_CODE 77
        FIXTURES_REQUIRED st_e2e_node
        ENVIRONMENT "STRATA_BIN=$<TARGET_FILE:strata>;DASHBOARD_ARTIFACTS=${CMAKE_CURRENT_BINARY_DIR}")
    # 2,000 requests from 200 clients: alone, so timing-sensitive suites
    # running beside it are not starved of the (few) cores.
    set_tests_properties(e2e_concurrency PROPERTIES RUN_SERIAL TRUE)
    # The soak benchmark (tests/bench/soak.mjs) for 20 s on the built-in tiny
    # model: every request's outcome matched with the server's log line and
    # /metrics, no slot, queue entry or descriptor left. Not its RSS trend
    # (--no-rss: that takes minutes; docs/BENCHMARKS.md "Soak"); nothing in
    # it depends on speed. Alone, as it loads every core.
    add_test(NAME e2e_soak_short
             COMMAND ${ST_NODE} ${PROJECT_SOURCE_DIR}/tests/bench/soak.mjs --seconds 20
                     --clients 40 --no-rss
             WORKING_DIRECTORY ${ST_E2E_DIR})
    set_tests_properties(e2e_soak_short PROPERTIES
        LABELS e2e TIMEOUT 180 RUN_SERIAL TRUE
        ENVIRONMENT "STRATA_BIN=$<TARGET_FILE:strata>;XDG_CACHE_HOME=${CMAKE_CURRENT_BINARY_DIR}/soak-cache")
    # The server on two CUDA devices: only on tests/cuemu (two emulated
    # GPUs on the CPU), labelled cuda with the other CUDA suites.
    if(STRATA_CUDA_EMU)
        add_test(NAME e2e_cuda_serve
                 COMMAND ${ST_NODE} --test --test-reporter=spec ${ST_E2E_DIR}/cuda_serve.test.mjs
                 WORKING_DIRECTORY ${ST_E2E_DIR})
        set_tests_properties(e2e_cuda_serve PROPERTIES
            LABELS "e2e;cuda" TIMEOUT 900
            FIXTURES_REQUIRED st_e2e_node
            ENVIRONMENT "STRATA_BIN=$<TARGET_FILE:strata>;CUEMU_DEVICES=2")
    endif()
else()
    add_test(NAME e2e_node_missing
             COMMAND sh -c "echo 'node and npm (Node.js 20+) are needed for the e2e suites: apt-get install nodejs npm' >&2; exit 1")
    set_tests_properties(e2e_node_missing PROPERTIES LABELS e2e)
endif()

add_test(NAME e2e_curl_smoke
         COMMAND bash ${ST_E2E_DIR}/curl_smoke.sh $<TARGET_FILE:strata> ${PROJECT_SOURCE_DIR})
set_tests_properties(e2e_curl_smoke PROPERTIES LABELS e2e TIMEOUT 60)
