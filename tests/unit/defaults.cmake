if(TARGET st_config)
    st_add_check_test(defaults SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_defaults.c
                      LIBS st_config st_engine st_sched)
endif()
