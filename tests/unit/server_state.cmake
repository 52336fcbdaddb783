# --state-dir (docs/OPERATIONS.md): the SQLite database (state/state_db.c),
# the response store kept in it (responses_store_sqlite.c) and the activity
# log (state/activity_db.c): open, put, get, prune, reopen, owner tags, a
# corrupt file and an unwritable directory refused, a write that fails
# (file size limit, as a full disk) leaving the store as it was.
if(TARGET st_server)
    st_add_check_test(server_state SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_server_state.c
                      LIBS st_server Threads::Threads)
    target_include_directories(test_server_state PRIVATE ${PROJECT_SOURCE_DIR}/src)
endif()
