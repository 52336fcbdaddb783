# deploy/: the Grafana dashboard and the Prometheus alert rules
# (docs/OPERATIONS.md). deploy_prometheus_rules: promtool checks the rules,
# runs their unit tests and parses every dashboard query (skipped, exit
# 77, without promtool). e2e_deploy: every metric they name is on a live
# /metrics (the Node fixture of e2e.cmake).
add_test(NAME deploy_prometheus_rules
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/deploy_rules.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(deploy_prometheus_rules PROPERTIES LABELS unit TIMEOUT 60
                     SKIP_RETURN_CODE 77)

find_program(ST_NODE node)   # e2e.cmake, which finds them too, may come after this file
find_program(ST_NPM npm)
if(TARGET strata AND ST_NODE AND ST_NPM)
    add_test(NAME e2e_deploy
             COMMAND ${ST_NODE} --test --test-reporter=spec ${CMAKE_CURRENT_LIST_DIR}/deploy.test.mjs
             WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR})
    set_tests_properties(e2e_deploy PROPERTIES
        LABELS e2e TIMEOUT 120
        FIXTURES_REQUIRED st_e2e_node
        ENVIRONMENT "STRATA_BIN=$<TARGET_FILE:strata>")
endif()
