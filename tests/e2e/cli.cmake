# e2e_cli: the strata binary's command line from a shell (exit statuses,
# messages, help, and a start/stop of serve on port 0 with the sim engine).
if(TARGET strata)
    add_test(NAME e2e_cli COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cli.sh $<TARGET_FILE:strata>
             ${PROJECT_SOURCE_DIR})
    set_tests_properties(e2e_cli PROPERTIES LABELS e2e TIMEOUT 120)
endif()
