if(TARGET st_config)
    st_add_check_test(config SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_config.c
                      ${CMAKE_CURRENT_LIST_DIR}/test_config_cli.c LIBS st_config)
endif()
