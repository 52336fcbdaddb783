# glm4moe files: make-model's glm-tiny read back (hparams, tensors, GLM's
# tokenizer keys) and the variants the loader refuses.
st_add_check_test(model_glm SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_model_glm.c
                  LIBS st_model m)
