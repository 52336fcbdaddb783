# Memory given back when idle (src/server/idle.c, issue 25): when the
# watcher's tick trims, from hand-fed quiet/work sequences.
if(TARGET st_server)
    st_add_check_test(server_idle SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_server_idle.c
                      LIBS st_server)
    target_include_directories(test_server_idle PRIVATE ${PROJECT_SOURCE_DIR}/src)
endif()
