# The MTP (nextn) layer: against the naive reference (forward_ref.c's
# ref_mtp_step), rollback, batching, and the mtp-demo preset.
st_add_check_test(mtp SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mtp.c
                  ${CMAKE_CURRENT_LIST_DIR}/forward_ref.c ${CMAKE_CURRENT_LIST_DIR}/forward_ref_next.c LIBS st_model m TIMEOUT 600)
