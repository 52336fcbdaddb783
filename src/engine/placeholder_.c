/* placeholder so the module library exists before its sources land; delete when the first real source is added. */
int st_engine_placeholder_(void);
int st_engine_placeholder_(void) { return 0; }
