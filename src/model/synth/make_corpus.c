/* make_corpus.c -- a small English text the built-in tokenizer's merges are
 * learned from (make_vocab.c). Written for this project; plain everyday
 * prose plus a little code and numbers so common words, spaces before
 * words, punctuation and newlines all get merges. Changing this text
 * changes every synthetic model's vocabulary, so leave it alone.
 */
#include "strata/compiler.h"

const char *st_mm_corpus(void);

const char *st_mm_corpus(void)
{
    return
        "The morning was cold and quiet, and the light came slowly over the hills. "
        "She opened the window, listened to the birds, and thought about the day ahead. "
        "There was a lot to do: the garden needed water, the letters had to be answered, "
        "and her brother was coming to visit in the afternoon.\n"
        "He had said that he would bring the old map they found in the house of their "
        "grandfather. Nobody knew where it came from, but everyone agreed that it was "
        "interesting. The map showed a river, a small town, and a path that went into "
        "the forest and did not come out again.\n\n"
        "When you write a program, you should start with something simple that works. "
        "Then you can change it one step at a time, and test every change before you "
        "make the next one. A good test is one that could fail: if it can never fail, "
        "it does not tell you anything about the program.\n"
        "The computer reads the file, splits the text into words, and counts how often "
        "each pair of symbols appears. The most common pair becomes a new symbol, and "
        "the process repeats until the vocabulary is large enough. This is how byte "
        "pair encoding works, and it is the reason why common words become single "
        "tokens while rare words are split into several pieces.\n\n"
        "What time is it? It is about half past nine. We have been waiting for an hour, "
        "and the train has not arrived yet. Would you like a cup of tea while we wait? "
        "Yes, please, that would be very kind of you. I think the weather will be "
        "better this evening, because the wind has changed and the clouds are moving "
        "to the east.\n"
        "In the summer the children played by the water every day. They built houses "
        "of sand and stone, and they watched the boats go by. Some of the boats were "
        "large and slow, others were small and fast, and one of them was painted red "
        "and white like a lighthouse.\n\n"
        "int main(void) {\n    int total = 0;\n    for (int i = 0; i < 10; i++) {\n"
        "        total += i * 2;\n    }\n    printf(\"%d\\n\", total);\n    return 0;\n}\n\n"
        "def greet(name):\n    return \"Hello, \" + name + \"!\"\n\n"
        "The numbers were 12, 345, 6789 and 2024; the answer was 42. "
        "Please note that the meeting on Monday starts at 10:30 and ends at 12:00.\n"
        "People often ask what makes a question difficult. Sometimes the problem is "
        "that the question itself is not clear, and sometimes the answer depends on "
        "information that we do not have. In both cases it helps to write down what "
        "we know, what we do not know, and what we would need to find out.\n"
        "The city was loud and bright at night. Cars and buses moved through the "
        "streets, people talked and laughed outside the restaurants, and music came "
        "from open windows. Above all of it, the moon was round and very bright.\n"
        "Thank you for your message. I will read the document carefully and send you "
        "my comments before the end of the week. If you have any questions in the "
        "meantime, please let me know.\n";
}
