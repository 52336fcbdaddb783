# The router-facing part of /metrics (src/server/http/metrics_epp.c) from
# hand-filled snapshots: totals first, cache geometry, models resident.
if(TARGET st_server)
    st_add_check_test(server_metrics_epp SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_server_metrics_epp.c
                      LIBS st_server)
    target_include_directories(test_server_metrics_epp PRIVATE ${PROJECT_SOURCE_DIR}/src)
endif()
