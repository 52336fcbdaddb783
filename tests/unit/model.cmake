st_add_check_test(model SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_model.c LIBS st_app st_model m
                  TIMEOUT 300 INPUT_CASES real_tokenizer)
# test_model runs the inspect and make-model commands (src/app/cli.h).
target_include_directories(test_model PRIVATE ${PROJECT_SOURCE_DIR}/src)
# model_real_tokenizer runs after tokenizer_ref, which installs the real
# Qwen3 tokenizer.json into the build tree; without it (no npm) it is skipped.
set_tests_properties(model_real_tokenizer PROPERTIES DEPENDS tokenizer_ref)
