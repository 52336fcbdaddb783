# deploy_manifests: deploy/ (Kubernetes manifests, the EPP configs, the
# file-discovery example) checked without a cluster: schema-level per kind,
# cross-checks between the files, and every metric the router reads against a
# live `strata serve` (sim). Python 3 with PyYAML (Debian python3-yaml);
# either missing reports the test skipped (77), never passed.
if(NOT TARGET strata)
    return()
endif()
find_program(ST_PYTHON3 python3)
if(ST_PYTHON3)
    add_test(NAME deploy_manifests
             COMMAND ${ST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_deploy.py
                     ${PROJECT_SOURCE_DIR}/deploy $<TARGET_FILE:strata>)
else()
    add_test(NAME deploy_manifests
             COMMAND sh -c "echo 'python3 (with python3-yaml) is needed to check deploy/'; exit 77")
endif()
set_tests_properties(deploy_manifests PROPERTIES LABELS unit TIMEOUT 120 SKIP_RETURN_CODE 77)
