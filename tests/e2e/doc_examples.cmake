# e2e_doc_examples: every curl example of README.md and docs/*.md runs as
# written against a live server, and README's Node.js SDK snippet runs in a
# default `npm init` project (doc_examples.py). Needs tests/e2e/node_modules
# (the e2e_npm_ci fixture of e2e.cmake).
if(TARGET strata)
    find_package(Python3 COMPONENTS Interpreter)
    if(Python3_Interpreter_FOUND)
        add_test(NAME e2e_doc_examples
                 COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/doc_examples.py
                         $<TARGET_FILE:strata> ${PROJECT_SOURCE_DIR})
    else()
        add_test(NAME e2e_doc_examples
                 COMMAND sh -c "echo 'python3 is needed for e2e_doc_examples (scripts/deps.sh --test)' >&2; exit 1")
    endif()
    # e2e.cmake (included after this file) defines the fixture's setup test.
    set_tests_properties(e2e_doc_examples PROPERTIES LABELS e2e TIMEOUT 300
                         FIXTURES_REQUIRED st_e2e_node)
endif()
