# State checkpoints of a recurrent model (next-tiny): a prompt sharing a
# system prompt resumes from one and answers as a fresh read; the bound
# per slot holds; -np 4 unchanged.
st_add_check_test(engine_ckpt SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_ckpt.c
                  LIBS st_engine TIMEOUT 300)
target_include_directories(test_engine_ckpt PRIVATE ${PROJECT_SOURCE_DIR}/src)
