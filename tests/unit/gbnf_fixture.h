/* gbnf_fixture.h -- llama.cpp's generic JSON grammar written out as GBNF
 * from the format's facts (compact: no comments), shared by the grammar
 * engine suite and bench_gbnf. */
#ifndef STRATA_TEST_GBNF_FIXTURE_H
#define STRATA_TEST_GBNF_FIXTURE_H

#define FIXTURE_JSON_GBNF                                                                   \
    "root   ::= object\n"                                                                  \
    "value  ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n" \
    "object ::= \"{\" ws ( string \":\" ws value (\",\" ws string \":\" ws value)* )? \"}\" ws\n" \
    "array  ::= \"[\" ws ( value (\",\" ws value)* )? \"]\" ws\n"                          \
    "string ::= \"\\\"\" ( [^\"\\\\\\x7F\\x00-\\x1F] |\n"                                  \
    "             \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) )* "                    \
    "\"\\\"\" ws\n"                                                                        \
    "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? "                     \
    "([eE] [-+]? [0-9] [1-9]{0,15})? ws\n"                                                 \
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n"

#endif /* STRATA_TEST_GBNF_FIXTURE_H */
