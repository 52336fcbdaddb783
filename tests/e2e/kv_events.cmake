# KV events (docs/KV-EVENTS.md): Python subscribers (Debian python3-zmq and
# python3-msgpack, installed by scripts/deps.sh --test) against the real
# binary on the sim. kv_events_test.py: an indexer's view against the
# slots' caches over a run of requests (reuse, evictions, a model swap);
# multipod_test.py: three pods steered by a picker that scores them as
# llm-d's EPP does. Each exits 77 (skipped) without the Python modules or
# with a strata built without libzmq/msgpack-c.
if(NOT TARGET strata)
    return()
endif()
# Debian's python3 first: a python3 earlier on PATH (pyenv) lacks its modules.
find_program(ST_PY3_DEBIAN python3 PATHS /usr/bin NO_DEFAULT_PATH)
find_program(ST_PY3 python3)
set(ST_KV_PY ${ST_PY3_DEBIAN})
if(NOT ST_KV_PY)
    set(ST_KV_PY ${ST_PY3})
endif()
foreach(suite kv_events multipod)
    if(NOT EXISTS ${CMAKE_CURRENT_LIST_DIR}/${suite}_test.py)
        continue()
    endif()
    if(ST_KV_PY)
        add_test(NAME e2e_${suite}
                 COMMAND ${ST_KV_PY} ${CMAKE_CURRENT_LIST_DIR}/${suite}_test.py)
    else()
        add_test(NAME e2e_${suite} COMMAND sh -c "echo 'SKIP: no python3'; exit 77")
    endif()
    set_tests_properties(e2e_${suite} PROPERTIES LABELS e2e TIMEOUT 180 SKIP_RETURN_CODE 77
                         ENVIRONMENT "STRATA_BIN=$<TARGET_FILE:strata>")
endforeach()
