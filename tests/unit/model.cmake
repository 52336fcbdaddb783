st_add_check_test(model SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_model.c LIBS st_app st_model m
                  TIMEOUT 300)
# test_model runs the inspect and make-model commands (src/app/cli.h).
target_include_directories(test_model PRIVATE ${PROJECT_SOURCE_DIR}/src)
# After tokenizer_ref, which installs the real Qwen3 tokenizer.json into the
# build tree (the import test reads it there; it says so when it is missing).
set_tests_properties(model PROPERTIES DEPENDS tokenizer_ref)
