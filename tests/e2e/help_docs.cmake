# e2e_help_docs: `strata --help` and every command's --help exit 0 and
# agree with docs/CLI.md, flag by flag, both ways (help_docs.py).
if(TARGET strata)
    find_package(Python3 COMPONENTS Interpreter)
    if(Python3_Interpreter_FOUND)
        add_test(NAME e2e_help_docs
                 COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/help_docs.py
                         $<TARGET_FILE:strata> ${PROJECT_SOURCE_DIR}/docs/CLI.md)
    else()
        add_test(NAME e2e_help_docs
                 COMMAND sh -c "echo 'python3 is needed for e2e_help_docs (scripts/deps.sh --test)' >&2; exit 1")
    endif()
    set_tests_properties(e2e_help_docs PROPERTIES LABELS e2e TIMEOUT 60)
endif()
