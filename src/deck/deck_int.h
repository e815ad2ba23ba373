/* deck_int.h — private to src/deck: the key table (keys.c) and the lexer
 * (lexer.c) as deck.c sees them. Nothing outside src/deck includes this;
 * the public interface is include/nereus/deck.h.
 */
#ifndef NEREUS_DECK_INT_H
#define NEREUS_DECK_INT_H

#include <stddef.h>

/* ---- key table (keys.c) ------------------------------------------------ */

typedef enum DeckType {
    DECK_T_INT,      /* int field; decimal with optional sign */
    DECK_T_INT64,    /* long long field */
    DECK_T_FLOAT,    /* float field; strtod over the whole token, finite */
    DECK_T_DOUBLE,   /* double field; parsed and checked like DECK_T_FLOAT, kept at 64 bits */
    DECK_T_BOOL,     /* int field, 0/1; true/false/yes/no/on/off/1/0 */
    DECK_T_STRING,   /* char[size]; rest of the line, optional double quotes */
    DECK_T_CHOICE,   /* char[size]; one of choices ("a|b|c") */
    DECK_T_LIST,     /* char[size]; comma list of distinct items of choices, stored as "a,b" */
    DECK_T_INT_AUTO, /* int field; "auto" is stored as 0 */
    DECK_T_PLAN      /* PlanStage field; one model-stage's layout and ranks (plan.h syntax) */
} DeckType;

typedef enum DeckBound { DECK_B_NONE, DECK_B_INCL, DECK_B_EXCL } DeckBound;

#define DECK_F_REQUIRED 1u /* no default: the deck must set it */
#define DECK_F_STEM     2u /* default is the deck file's stem ([run] name) */

typedef struct DeckKey {
    const char *section;
    const char *key;
    DeckType type;
    unsigned flags;
    const char *def;        /* default as deck text, resolved like a value; NULL with a flag */
    DeckBound lo_kind;      /* numeric range; for ints the bounds are whole numbers */
    double lo;
    DeckBound hi_kind;
    double hi;
    const char *choices;    /* DECK_T_CHOICE / DECK_T_LIST: "a|b|c" */
    size_t offset;          /* offsetof(Config, ...) */
    size_t size;            /* sizeof the field */
    const char *meaning;    /* one line for the reference */
} DeckKey;

extern const DeckKey deck_keys[];
extern const size_t deck_nkeys;
/* Section names in table order (every key's section is one of them). */
extern const char *const deck_sections[];
extern const size_t deck_nsections;

/* Index into deck_keys of section.key, or -1. Lengths because the names
 * come straight out of the deck bytes. */
int deck_key_find(const char *sec, size_t sec_len, const char *key, size_t key_len);
/* Index of "section.key" (one string), or -1. */
int deck_key_find_dotted(const char *section_dot_key);
/* Index into deck_sections, or -1. */
int deck_section_find(const char *sec, size_t sec_len);

/* ---- lexer (lexer.c) ---------------------------------------------------- */

typedef enum DeckTokKind {
    DECK_TOK_END,
    DECK_TOK_SECTION, /* name = section name */
    DECK_TOK_KEY,     /* name = key, value = value text (quotes removed) */
    DECK_TOK_ERROR    /* err holds the message (no "FILE:LINE:" prefix) */
} DeckTokKind;

typedef struct DeckTok {
    DeckTokKind kind;
    int line;          /* 1-based */
    const char *name;  /* points into the deck bytes; not NUL-terminated */
    size_t name_len;
    const char *value;
    size_t value_len;
    int quoted;        /* the value was written in double quotes */
} DeckTok;

typedef struct DeckLexer {
    const char *p, *end;
    int line;          /* line of the last token */
} DeckLexer;

/* text is the whole deck; a UTF-8 byte-order mark at its start is skipped. */
void deck_lex_init(DeckLexer *lx, const char *text, size_t len);
/* Next section header or key line; blank and comment lines are skipped.
 * On DECK_TOK_ERROR, err (errsz bytes) holds a one-line message. */
DeckTok deck_lex_next(DeckLexer *lx, char *err, size_t errsz);

/* 1 if the bytes look like a binary file rather than text (a NUL byte, or
 * too many bytes that are neither text nor UTF-8); why gets the reason. */
int deck_lex_is_binary(const char *text, size_t len, char *why, size_t whysz);

/* Copy at most ~60 bytes of s into dst for quoting user text in a message,
 * cut at a UTF-8 character boundary and marked "..." when cut. */
void deck_clip(char *dst, size_t dstsz, const char *s, size_t len);

#endif
