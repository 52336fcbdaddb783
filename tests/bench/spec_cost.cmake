# bench_spec_cost: what a draft-verify step is made of on a model with an MTP
# layer (docs/ENGINE.md "Draft length: cost-aware"): the main forward vs the
# MTP upkeep vs the draft passes, by rows and slots (not a ctest; run by
# scripts/bench.sh or by hand: build-x/tests/bench_spec_cost MODEL.gguf ...).
add_executable(bench_spec_cost ${CMAKE_CURRENT_LIST_DIR}/bench_spec_cost.c)
target_link_libraries(bench_spec_cost PRIVATE st_model st_warnings)
