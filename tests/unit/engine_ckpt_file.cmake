# Slot files with state checkpoints (next-tiny): a slot saved after a long
# prompt and restored into a fresh pool resumes a shared prefix from its
# checkpoint with a fresh read's greedy tokens; version 1 files restore
# without checkpoints; a later version is refused.
st_add_check_test(engine_ckpt_file SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_ckpt_file.c
                  LIBS st_engine TIMEOUT 300)
target_include_directories(test_engine_ckpt_file PRIVATE ${PROJECT_SOURCE_DIR}/src)
