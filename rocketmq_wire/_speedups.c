/*
 * Optional C versions of the codec's hot paths (see rocketmq_wire/accel.py, the only importer).
 *
 * The pure-Python code in command.py, header_binary.py, header_json.py, javahash.py and headers/base.py is
 * the reference: every function here must give the very same result. Where the result would need a rule
 * this file does not implement (an unusual type, a number out of range, JSON laid out differently from
 * what Java writes ...) a function returns None ("declines"; infer_capacity, whose answer may be None,
 * returns NotImplemented) and the caller runs the reference instead, so a decline can cost time but never
 * correctness. Malformed binary input raises WireError (a ValueError) with the reference's exact message;
 * the Python caller turns it into CodecError.
 *
 * Every read of input bytes is bounds-checked against the end of the input.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

static PyObject *WireError;
static PyObject *s_true;     /* "true" */
static PyObject *s_false;    /* "false" */
static PyObject *s_check;    /* "check" */
static PyObject *s_capacity; /* "capacity" */
static PyObject *s_name;     /* "_name_" */
static PyObject *empty_tuple;

#define DECLINE() Py_NewRef(Py_None)

#define INT16_MIN_ (-32768LL)
#define INT16_MAX_ 32767LL
#define INT32_MIN_ (-2147483648LL)
#define INT32_MAX_ 2147483647LL
#define MAX_TABLE (1LL << 30)

/* ---------------------------------------------------------------------------------------------------- */
/* Python version differences */

static int
str_ready(PyObject *s)
{
#if PY_VERSION_HEX < 0x030C0000
    return PyUnicode_READY(s);
#else
    (void)s;
    return 0;
#endif
}

/* The current exception (a new reference), cleared. */
static PyObject *
take_exception(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
#endif
}

/* ---------------------------------------------------------------------------------------------------- */
/* growable output buffer, on the stack until it outgrows it */

typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
    char stack[2048];
} Buf;

static void
buf_init(Buf *b)
{
    b->data = b->stack;
    b->len = 0;
    b->cap = (Py_ssize_t)sizeof b->stack;
}

static void
buf_free(Buf *b)
{
    if (b->data != b->stack) {
        PyMem_Free(b->data);
    }
}

static int
buf_reserve(Buf *b, Py_ssize_t extra)
{
    if (extra > PY_SSIZE_T_MAX - b->len) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t need = b->len + extra;
    if (need <= b->cap) {
        return 0;
    }
    Py_ssize_t cap = b->cap;
    while (cap < need) {
        cap = cap > PY_SSIZE_T_MAX / 2 ? need : cap * 2;
    }
    char *p;
    if (b->data == b->stack) {
        p = PyMem_Malloc((size_t)cap);
        if (p != NULL) {
            memcpy(p, b->stack, (size_t)b->len);
        }
    }
    else {
        p = PyMem_Realloc(b->data, (size_t)cap);
    }
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

static int
buf_put(Buf *b, const void *src, Py_ssize_t n)
{
    if (buf_reserve(b, n) < 0) {
        return -1;
    }
    memcpy(b->data + b->len, src, (size_t)n);
    b->len += n;
    return 0;
}

#define BUF_LIT(b, lit) buf_put((b), (lit), (Py_ssize_t)(sizeof(lit) - 1))

static void
put_be16(char *p, long long v)
{
    p[0] = (char)((v >> 8) & 0xFF);
    p[1] = (char)(v & 0xFF);
}

static void
put_be32(char *p, long long v)
{
    p[0] = (char)((v >> 24) & 0xFF);
    p[1] = (char)((v >> 16) & 0xFF);
    p[2] = (char)((v >> 8) & 0xFF);
    p[3] = (char)(v & 0xFF);
}

/* ---------------------------------------------------------------------------------------------------- */
/* numbers and strings */

/* Decimal digits of v into out (at least 21 bytes); returns the length. */
static int
format_ll(char *out, long long v)
{
    char tmp[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        tmp[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u != 0);
    int len = 0;
    if (v < 0) {
        out[len++] = '-';
    }
    while (n > 0) {
        out[len++] = tmp[--n];
    }
    return len;
}

/* An exact int as a long long; 0 when it is not one or does not fit (the caller declines). */
static int
exact_ll(PyObject *o, long long *out)
{
    if (!PyLong_CheckExact(o)) {
        return 0;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    *out = v;
    return 1;
}

/* Any int (an IntEnum member too) as a long long; 0 when it is not one or does not fit. */
static int
any_ll(PyObject *o, long long *out)
{
    if (!PyLong_Check(o)) {
        return 0;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    *out = v;
    return 1;
}

/* str(x) as a new str object. */
static PyObject *
int_to_str_ll(long long x)
{
    if (x >= 0 && x <= 9) {
        return PyUnicode_FromOrdinal((int)('0' + x));
    }
    char digits[24];
    int n = format_ll(digits, x);
    PyObject *s = PyUnicode_New(n, 127);
    if (s == NULL) {
        return NULL;
    }
    memcpy(PyUnicode_1BYTE_DATA(s), digits, (size_t)n);
    return s;
}

/* A tuple of n new references (any NULL: all released, NULL returned). */
static PyObject *
tuple_of(PyObject **items, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (items[i] == NULL) {
            goto fail;
        }
    }
    PyObject *t = PyTuple_New(n);
    if (t == NULL) {
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(t, i, items[i]);
    }
    return t;
fail:
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_XDECREF(items[i]);
    }
    return NULL;
}

/*
 * The UTF-8 bytes of str s: borrowed from s when it is ASCII, else held by *owner (a new bytes object).
 * 0 done, -1 error, 1 decline: s holds a lone surrogate, which the reference writes as Java does
 * (javatext.JAVA_UTF8).
 */
static int
utf8_view(PyObject *s, const char **p, Py_ssize_t *n, PyObject **owner)
{
    *owner = NULL;
    if (str_ready(s) < 0) {
        return -1;
    }
    if (PyUnicode_IS_ASCII(s)) {
        *p = (const char *)PyUnicode_1BYTE_DATA(s);
        *n = PyUnicode_GET_LENGTH(s);
        return 0;
    }
    *owner = PyUnicode_AsUTF8String(s);
    if (*owner == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
            PyErr_Clear();
            return 1;
        }
        return -1;
    }
    *p = PyBytes_AS_STRING(*owner);
    *n = PyBytes_GET_SIZE(*owner);
    return 0;
}

/* Whether s is non-empty ASCII digits only (str.isdigit() and str.isascii()). */
static int
ascii_digits(PyObject *s)
{
    if (!PyUnicode_IS_ASCII(s)) {
        return 0;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    const Py_UCS1 *p = PyUnicode_1BYTE_DATA(s);
    if (n == 0) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return 0;
        }
    }
    return 1;
}

/* Whether ASCII str s spells "true" in any case (Boolean.parseBoolean). */
static int
ascii_true(PyObject *s)
{
    if (PyUnicode_GET_LENGTH(s) != 4) {
        return 0;
    }
    const Py_UCS1 *p = PyUnicode_1BYTE_DATA(s);
    return (p[0] | 0x20) == 't' && (p[1] | 0x20) == 'r' && (p[2] | 0x20) == 'u' && (p[3] | 0x20) == 'e';
}

/* ---------------------------------------------------------------------------------------------------- */
/* Java String.hashCode and HashMap order */

static uint32_t
java_hash(PyObject *s)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    const void *data = PyUnicode_DATA(s);
    uint32_t h = 0;
    switch (PyUnicode_KIND(s)) {
    case PyUnicode_1BYTE_KIND: {
        const Py_UCS1 *p = data;
        for (Py_ssize_t i = 0; i < n; i++) {
            h = 31u * h + p[i];
        }
        break;
    }
    case PyUnicode_2BYTE_KIND: {
        const Py_UCS2 *p = data;
        for (Py_ssize_t i = 0; i < n; i++) {
            h = 31u * h + p[i];
        }
        break;
    }
    default: {
        const Py_UCS4 *p = data;
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_UCS4 c = p[i];
            if (c > 0xFFFF) { /* Java hashes UTF-16 code units: a surrogate pair */
                c -= 0x10000;
                h = 31u * h + (0xD800u | (c >> 10));
                h = 31u * h + (0xDC00u | (c & 0x3FF));
            }
            else {
                h = 31u * h + c;
            }
        }
        break;
    }
    }
    return h;
}

static uint32_t
spread(uint32_t h)
{
    return h ^ (h >> 16);
}

/* HashMap's table size after `entries` puts (javahash.final_table_size); -1 (no exception) to decline. */
static long long
table_size(Py_ssize_t entries, PyObject *capacity)
{
    long long size;
    if (capacity == Py_None) {
        size = 16;
    }
    else {
        if (!PyLong_Check(capacity)) {
            return -1;
        }
        int overflow = 0;
        long long cap = PyLong_AsLongLongAndOverflow(capacity, &overflow);
        if (cap == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return -1;
        }
        if (overflow > 0) {
            size = MAX_TABLE;
        }
        else if (overflow < 0 || cap <= 1) {
            size = 1;
        }
        else {
            unsigned long long m = (unsigned long long)cap - 1;
            int bits = 0;
            while (m != 0) {
                bits++;
                m >>= 1;
            }
            size = bits >= 30 ? MAX_TABLE : (1LL << bits);
        }
    }
    while ((long long)entries > size * 3 / 4 && size < MAX_TABLE) {
        size *= 2;
    }
    return size;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/*
 * Positions 0..n-1 in HashMap iteration order given each key's String.hashCode: by bucket, and within a
 * bucket by position (sorting (bucket << 32 | position) keeps insertion order). 1 done, 0 decline, -1 error.
 */
static int
hashmap_positions(const uint32_t *hashes, Py_ssize_t n, PyObject *capacity, Py_ssize_t *order)
{
    long long size = table_size(n, capacity);
    if (size < 0) {
        return 0;
    }
    uint32_t mask = (uint32_t)(size - 1);
    uint64_t stack[64];
    uint64_t *keys = n <= 64 ? stack : PyMem_Malloc((size_t)n * sizeof *keys);
    if (keys == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        keys[i] = ((uint64_t)(spread(hashes[i]) & mask) << 32) | (uint64_t)i;
    }
    if (n > 32) {
        qsort(keys, (size_t)n, sizeof *keys, cmp_u64);
    }
    else {
        for (Py_ssize_t i = 1; i < n; i++) {
            uint64_t x = keys[i];
            Py_ssize_t j = i;
            while (j > 0 && keys[j - 1] > x) {
                keys[j] = keys[j - 1];
                j--;
            }
            keys[j] = x;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        order[i] = (Py_ssize_t)(keys[i] & 0xFFFFFFFFu);
    }
    if (keys != stack) {
        PyMem_Free(keys);
    }
    return 1;
}

/* Whether keys with these hash codes are in the iteration order of a map built with `capacity`. */
static int
in_hashmap_order(const uint32_t *hashes, Py_ssize_t n, PyObject *capacity)
{
    long long size = table_size(n, capacity);
    if (size < 0) {
        return -2;
    }
    uint32_t mask = (uint32_t)(size - 1);
    long long last = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        long long bucket = (long long)(spread(hashes[i]) & mask);
        if (bucket < last) {
            return 0;
        }
        last = bucket;
    }
    return 1;
}

/*
 * The first of `known` capacities whose map would iterate these keys in this order, else None (a new
 * reference); NULL with no exception set to decline.
 */
static PyObject *
capacity_for(const uint32_t *hashes, Py_ssize_t n, PyObject *known)
{
    if (!PyTuple_Check(known)) {
        return NULL;
    }
    for (Py_ssize_t c = 0; c < PyTuple_GET_SIZE(known); c++) {
        PyObject *capacity = PyTuple_GET_ITEM(known, c);
        int fits = in_hashmap_order(hashes, n, capacity);
        if (fits == -2) {
            return NULL;
        }
        if (fits) {
            return Py_NewRef(capacity);
        }
    }
    return Py_NewRef(Py_None);
}

/* Hash codes of a dict's keys, in its order, into hashes[n] (n = its size); 0 if a key is not a str. */
static int
dict_key_hashes(PyObject *d, uint32_t *hashes, PyObject **keys, PyObject **values)
{
    Py_ssize_t pos = 0, i = 0;
    PyObject *k, *v;
    while (PyDict_Next(d, &pos, &k, &v)) {
        if (!PyUnicode_Check(k) || str_ready(k) < 0) {
            PyErr_Clear();
            return 0;
        }
        hashes[i] = java_hash(k);
        if (keys != NULL) {
            keys[i] = k;
            values[i] = v;
        }
        i++;
    }
    return 1;
}

static PyObject *
sp_java_string_hash(PyObject *module, PyObject *arg)
{
    (void)module;
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "java_string_hash() needs a str, not %.100s", Py_TYPE(arg)->tp_name);
        return NULL;
    }
    if (str_ready(arg) < 0) {
        return NULL;
    }
    return PyLong_FromUnsignedLong(java_hash(arg));
}

/* items_java_order(d, capacity) -> the (key, value) items of d in HashMap order, or None to decline. */
static PyObject *
sp_items_java_order(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2 || !PyDict_Check(args[0])) {
        return DECLINE();
    }
    PyObject *d = args[0];
    Py_ssize_t n = PyDict_GET_SIZE(d);
    void *mem = PyMem_Malloc((size_t)(n > 0 ? n : 1) * (2 * sizeof(PyObject *) + sizeof(uint32_t) + sizeof(Py_ssize_t)));
    if (mem == NULL) {
        return PyErr_NoMemory();
    }
    PyObject **keys = mem;
    PyObject **values = keys + n;
    Py_ssize_t *order = (Py_ssize_t *)(values + n);
    uint32_t *hashes = (uint32_t *)(order + n);
    PyObject *result = NULL;
    if (!dict_key_hashes(d, hashes, keys, values)) {
        result = DECLINE();
        goto done;
    }
    int rc = hashmap_positions(hashes, n, args[1], order);
    if (rc <= 0) {
        result = rc == 0 ? DECLINE() : NULL;
        goto done;
    }
    result = PyList_New(n);
    if (result == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyTuple_Pack(2, keys[order[i]], values[order[i]]);
        if (pair == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, i, pair);
    }
done:
    PyMem_Free(mem);
    return result;
}

/* infer_capacity(keys: dict | tuple | list, known: tuple) -> the first known capacity that fits, or None. */
static PyObject *
sp_infer_capacity(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2) {
        return Py_NewRef(Py_NotImplemented);
    }
    PyObject *src = args[0];
    int is_dict = PyDict_Check(src);
    if (!is_dict && !PyTuple_Check(src) && !PyList_Check(src)) {
        return Py_NewRef(Py_NotImplemented);
    }
    Py_ssize_t n = is_dict ? PyDict_GET_SIZE(src) : PySequence_Fast_GET_SIZE(src);
    uint32_t stack[64];
    uint32_t *hashes = n <= 64 ? stack : PyMem_Malloc((size_t)n * sizeof *hashes);
    if (hashes == NULL) {
        return PyErr_NoMemory();
    }
    PyObject *result = NULL;
    int ok = 1;
    if (is_dict) {
        ok = dict_key_hashes(src, hashes, NULL, NULL);
    }
    else {
        for (Py_ssize_t i = 0; ok && i < n; i++) {
            PyObject *key = PySequence_Fast_GET_ITEM(src, i);
            if (!PyUnicode_Check(key) || str_ready(key) < 0) {
                PyErr_Clear();
                ok = 0;
            }
            else {
                hashes[i] = java_hash(key);
            }
        }
    }
    if (ok) {
        result = capacity_for(hashes, n, args[1]);
    }
    if (result == NULL && !PyErr_Occurred()) {
        result = Py_NewRef(Py_NotImplemented);
    }
    if (hashes != stack) {
        PyMem_Free(hashes);
    }
    return result;
}

/* ---------------------------------------------------------------------------------------------------- */
/* entries on their way out: rendered header fields and ext entries */

typedef struct {
    PyObject *key;  /* strong reference, an exact str */
    PyObject *text; /* strong reference, an exact str; NULL when the value is the number num */
    long long num;
    uint32_t hash; /* String.hashCode of key */
} Entry;

typedef struct {
    Entry *v;
    Py_ssize_t n;
    Py_ssize_t cap;
    Entry stack[32];
} Entries;

static void
ents_init(Entries *e)
{
    e->v = e->stack;
    e->n = 0;
    e->cap = (Py_ssize_t)(sizeof e->stack / sizeof e->stack[0]);
}

static void
ents_free(Entries *e)
{
    for (Py_ssize_t i = 0; i < e->n; i++) {
        Py_DECREF(e->v[i].key);
        Py_XDECREF(e->v[i].text);
    }
    if (e->v != e->stack) {
        PyMem_Free(e->v);
    }
}

/*
 * Add key -> (text | num); text is stolen. With merge, a key already present keeps its place and takes
 * the new value, as a dict does; otherwise the entry is appended as is.
 */
static int
ents_put(Entries *e, PyObject *key, PyObject *text, long long num, int merge)
{
    uint32_t h = java_hash(key);
    if (merge) {
        for (Py_ssize_t i = 0; i < e->n; i++) {
            Entry *x = &e->v[i];
            if (x->hash == h && (x->key == key || PyUnicode_Compare(x->key, key) == 0)) {
                Py_XSETREF(x->text, text);
                x->num = num;
                return 0;
            }
        }
    }
    if (e->n == e->cap) {
        Py_ssize_t cap = e->cap * 2;
        Entry *v = PyMem_Malloc((size_t)cap * sizeof *v);
        if (v == NULL) {
            Py_XDECREF(text);
            PyErr_NoMemory();
            return -1;
        }
        memcpy(v, e->v, (size_t)e->n * sizeof *v);
        if (e->v != e->stack) {
            PyMem_Free(e->v);
        }
        e->v = v;
        e->cap = cap;
    }
    Entry *x = &e->v[e->n++];
    x->key = Py_NewRef(key);
    x->text = text;
    x->num = num;
    x->hash = h;
    return 0;
}

/* The (str, str) tuples of a list; 1 done, 0 decline (another shape), -1 error. */
static int
ents_from_list(Entries *e, PyObject *list)
{
    if (!PyList_CheckExact(list)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *item = PyList_GET_ITEM(list, i);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2 ||
            !PyUnicode_CheckExact(PyTuple_GET_ITEM(item, 0)) || !PyUnicode_CheckExact(PyTuple_GET_ITEM(item, 1))) {
            return 0;
        }
        if (str_ready(PyTuple_GET_ITEM(item, 0)) < 0 ||
            ents_put(e, PyTuple_GET_ITEM(item, 0), Py_NewRef(PyTuple_GET_ITEM(item, 1)), 0, 0) < 0) {
            return -1;
        }
    }
    return 1;
}

/* The entries of a dict of str to str; 1 done, 0 decline, -1 error. */
static int
ents_from_dict(Entries *e, PyObject *d, int merge)
{
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(d, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k) || !PyUnicode_CheckExact(v)) {
            return 0;
        }
        if (str_ready(k) < 0 || ents_put(e, k, Py_NewRef(v), 0, merge) < 0) {
            return -1;
        }
    }
    return 1;
}

/*
 * A typed header's fields, plan = ((attr, java, kind), ...), as CommandHeader._render gives them.
 *
 * _render picks a rendering by kind and type, but for the types handled here (exact str, exact int, bool)
 * every branch of it gives the same text: the value itself, str(value), "true"/"false". Any other value
 * (a float, a subclass) declines. 1 done, 0 decline, -1 error.
 */
static int
ents_render(Entries *e, PyObject *header, PyObject *plan, int merge)
{
    if (!PyTuple_Check(plan)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(plan); i++) {
        PyObject *step = PyTuple_GET_ITEM(plan, i);
        if (!PyTuple_Check(step) || PyTuple_GET_SIZE(step) < 2 || !PyUnicode_CheckExact(PyTuple_GET_ITEM(step, 1))) {
            return 0;
        }
        PyObject *java = PyTuple_GET_ITEM(step, 1);
        PyObject *value = PyObject_GetAttr(header, PyTuple_GET_ITEM(step, 0));
        if (value == NULL) {
            return -1;
        }
        if (value == Py_None) {
            Py_DECREF(value);
            continue;
        }
        PyObject *text = NULL;
        long long num = 0;
        if (PyUnicode_CheckExact(value)) {
            text = value;
        }
        else if (PyBool_Check(value)) {
            text = Py_NewRef(value == Py_True ? s_true : s_false);
            Py_DECREF(value);
        }
        else if (PyLong_CheckExact(value)) {
            int overflow = 0;
            num = PyLong_AsLongLongAndOverflow(value, &overflow);
            if (overflow != 0) {
                text = PyObject_Str(value);
                if (text == NULL) {
                    Py_DECREF(value);
                    return -1;
                }
            }
            Py_DECREF(value);
        }
        else {
            Py_DECREF(value);
            return 0;
        }
        if (str_ready(java) < 0 || ents_put(e, java, text, num, merge) < 0) {
            return -1;
        }
    }
    return 1;
}

/* ---------------------------------------------------------------------------------------------------- */
/* the ROCKETMQ binary header, written */

#define FIXED_SIZE 17 /* ">hbhiii": code, language, version, opaque, flag, remark length */

static int
check_range(const char *name, long long v, long long low, long long high)
{
    if (v < low || v > high) {
        PyErr_Format(WireError, "%s %lld does not fit the binary header (%lld..%lld)", name, v, low, high);
        return -1;
    }
    return 0;
}

/*
 * One entry: short key length, key, int value length, value. The value's UTF-8 is made before the key's,
 * as in the reference, so an entry with two faults reports the same one. 1 done, 0 decline, -1 error.
 */
static int
put_binary_entry(Buf *b, const Entry *x)
{
    char digits[24];
    const char *vp, *kp;
    Py_ssize_t vlen, klen;
    PyObject *vowner = NULL, *kowner;
    int got;
    if (x->text == NULL) {
        vlen = format_ll(digits, x->num);
        vp = digits;
    }
    else if ((got = utf8_view(x->text, &vp, &vlen, &vowner)) != 0) {
        return got < 0 ? -1 : 0;
    }
    if ((got = utf8_view(x->key, &kp, &klen, &kowner)) != 0) {
        Py_XDECREF(vowner);
        return got < 0 ? -1 : 0;
    }
    int rc = 1;
    if (klen > INT16_MAX_) {
        PyErr_Format(WireError, "ext key of %zd bytes is too long for the binary header", klen);
        rc = -1;
    }
    else if (vlen > INT32_MAX_) {
        rc = 0;
    }
    else if (buf_reserve(b, 6 + klen + vlen) < 0) {
        rc = -1;
    }
    else {
        char *out = b->data + b->len;
        put_be16(out, klen);
        memcpy(out + 2, kp, (size_t)klen);
        put_be32(out + 2 + klen, vlen);
        memcpy(out + 6 + klen, vp, (size_t)vlen);
        b->len += 6 + klen + vlen;
    }
    Py_XDECREF(vowner);
    Py_XDECREF(kowner);
    return rc;
}

/* pre's entries in their order, then map's in `order` (NULL: their own order). 1 done, 0 decline, -1. */
static int
put_binary_entries(Buf *b, const Entries *pre, const Entries *map, const Py_ssize_t *order)
{
    if (pre != NULL) {
        for (Py_ssize_t i = 0; i < pre->n; i++) {
            int rc = put_binary_entry(b, &pre->v[i]);
            if (rc <= 0) {
                return rc;
            }
        }
    }
    if (map != NULL) {
        for (Py_ssize_t i = 0; i < map->n; i++) {
            int rc = put_binary_entry(b, &map->v[order != NULL ? order[i] : i]);
            if (rc <= 0) {
                return rc;
            }
        }
    }
    return 1;
}

/*
 * The whole binary header (header_binary.encode_binary_header) appended to b, range checks and their
 * messages included. `language` is the LanguageCode (an int). 1 done, 0 decline, -1 error.
 */
static int
write_binary_header(Buf *b, long long code, PyObject *language, long long version, long long opaque,
                    long long flag, PyObject *remark, const Entries *pre, const Entries *map,
                    const Py_ssize_t *order)
{
    int overflow = 0;
    long long lang = PyLong_AsLongLongAndOverflow(language, &overflow);
    if (overflow != 0 || (lang == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    if (check_range("code", code, INT16_MIN_, INT16_MAX_) < 0 ||
        check_range("version", version, INT16_MIN_, INT16_MAX_) < 0 ||
        check_range("opaque", opaque, INT32_MIN_, INT32_MAX_) < 0 ||
        check_range("flag", flag, INT32_MIN_, INT32_MAX_) < 0) {
        return -1;
    }
    if (lang < -128 || lang > 127) {
        PyErr_Format(WireError, "language %lld does not fit in a byte", lang);
        return -1;
    }
    Py_ssize_t start = b->len;
    char fixed[FIXED_SIZE + 4];
    put_be16(fixed, code);
    fixed[2] = (char)(lang & 0xFF);
    put_be16(fixed + 3, version);
    put_be32(fixed + 5, opaque);
    put_be32(fixed + 9, flag);
    put_be32(fixed + 13, 0);
    if (buf_put(b, fixed, FIXED_SIZE) < 0) {
        return -1;
    }
    if (remark != Py_None && PyUnicode_GET_LENGTH(remark) > 0) { /* the reference skips an empty remark */
        const char *rp;
        Py_ssize_t rlen;
        PyObject *owner;
        int got = utf8_view(remark, &rp, &rlen, &owner);
        if (got != 0) {
            return got < 0 ? -1 : 0;
        }
        int rc = rlen > INT32_MAX_ ? 0 : (buf_put(b, rp, rlen) < 0 ? -1 : 1);
        Py_XDECREF(owner);
        if (rc <= 0) {
            return rc;
        }
        put_be32(b->data + start + 13, rlen);
    }
    Py_ssize_t ext_at = b->len;
    if (buf_put(b, fixed + 13, 4) < 0) {
        return -1;
    }
    int rc = put_binary_entries(b, pre, map, order);
    if (rc <= 0) {
        return rc;
    }
    Py_ssize_t ext_len = b->len - ext_at - 4;
    if (ext_len > INT32_MAX_) {
        return 0;
    }
    put_be32(b->data + ext_at, ext_len);
    return 1;
}

/* bytes of the buffer for rc > 0, None for rc == 0, NULL for rc < 0. */
static PyObject *
buf_result(Buf *b, int rc)
{
    if (rc > 0) {
        return PyBytes_FromStringAndSize(b->data, b->len);
    }
    return rc == 0 ? DECLINE() : NULL;
}

/* encode_entries(entries: list[tuple[str, str]]) -> bytes */
static PyObject *
sp_encode_entries(PyObject *module, PyObject *entries)
{
    (void)module;
    Entries e;
    ents_init(&e);
    Buf b;
    buf_init(&b);
    PyObject *result = NULL;
    int rc = ents_from_list(&e, entries);
    if (rc > 0) {
        rc = put_binary_entries(&b, &e, NULL, NULL);
    }
    if (rc > 0) {
        result = PyBytes_FromStringAndSize(b.data, b.len);
    }
    else if (rc == 0) {
        result = DECLINE();
    }
    buf_free(&b);
    ents_free(&e);
    return result;
}

/* encode_binary_header(code, language, version, opaque, flag, remark, entries: list) -> bytes */
static PyObject *
sp_encode_binary_header(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    long long code, version, opaque, flag;
    if (nargs != 7 || !PyLong_Check(args[1]) || !exact_ll(args[0], &code) || !exact_ll(args[2], &version) ||
        !exact_ll(args[3], &opaque) || !exact_ll(args[4], &flag) ||
        (args[5] != Py_None && !PyUnicode_CheckExact(args[5]))) {
        return DECLINE();
    }
    Entries e;
    ents_init(&e);
    Buf b;
    buf_init(&b);
    int rc = ents_from_list(&e, args[6]);
    if (rc > 0) {
        rc = write_binary_header(&b, code, args[1], version, opaque, flag, args[5], &e, NULL, NULL);
    }
    PyObject *result = buf_result(&b, rc);
    buf_free(&b);
    ents_free(&e);
    return result;
}

/* ---------------------------------------------------------------------------------------------------- */
/* the JSON header, as fastjson writes it */

static const char HEX[] = "0123456789ABCDEF";

/*
 * Append s as a fastjson string literal: \b \t \n \f \r " \ short, the other C0 controls, U+007F..U+009F and
 * U+2028/U+2029 as upper-case \uXXXX, everything else raw UTF-8 (fastjson.dump_str). A lone surrogate becomes
 * "?" and a high surrogate followed by a low one the character they make, as Java's getBytes writes them
 * (javatext.JAVA_UTF8).
 */
static int
json_put_str(Buf *b, PyObject *s)
{
    if (str_ready(s) < 0) {
        return -1;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    if (n > (PY_SSIZE_T_MAX - 2) / 6) {
        PyErr_NoMemory();
        return -1;
    }
    if (buf_reserve(b, n * 6 + 2) < 0) { /* at most 6 bytes a character, and the quotes */
        return -1;
    }
    char *out = b->data + b->len;
    *out++ = '"';
    if (PyUnicode_IS_ASCII(s)) {
        const Py_UCS1 *p = data;
        Py_ssize_t i = 0;
        while (i < n) {
            Py_ssize_t j = i; /* the run that needs no escaping, copied in one go */
            while (j < n && p[j] >= 0x20 && p[j] != '"' && p[j] != '\\' && p[j] != 0x7F) {
                j++;
            }
            memcpy(out, p + i, (size_t)(j - i));
            out += j - i;
            i = j;
            if (i < n) {
                Py_UCS1 c = p[i++];
                *out++ = '\\';
                switch (c) {
                case '"': *out++ = '"'; break;
                case '\\': *out++ = '\\'; break;
                case '\b': *out++ = 'b'; break;
                case '\t': *out++ = 't'; break;
                case '\n': *out++ = 'n'; break;
                case '\f': *out++ = 'f'; break;
                case '\r': *out++ = 'r'; break;
                default:
                    *out++ = 'u';
                    *out++ = '0';
                    *out++ = '0';
                    *out++ = HEX[c >> 4];
                    *out++ = HEX[c & 0xF];
                }
            }
        }
    }
    else {
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (c < 0x80 && c >= 0x20 && c != '"' && c != '\\' && c != 0x7F) {
                *out++ = (char)c;
            }
            else if (c < 0xA0 || c == 0x2028 || c == 0x2029) {
                *out++ = '\\';
                switch (c) {
                case '"': *out++ = '"'; break;
                case '\\': *out++ = '\\'; break;
                case '\b': *out++ = 'b'; break;
                case '\t': *out++ = 't'; break;
                case '\n': *out++ = 'n'; break;
                case '\f': *out++ = 'f'; break;
                case '\r': *out++ = 'r'; break;
                default:
                    *out++ = 'u';
                    *out++ = HEX[(c >> 12) & 0xF];
                    *out++ = HEX[(c >> 8) & 0xF];
                    *out++ = HEX[(c >> 4) & 0xF];
                    *out++ = HEX[c & 0xF];
                }
            }
            else if (c < 0x800) {
                *out++ = (char)(0xC0 | (c >> 6));
                *out++ = (char)(0x80 | (c & 0x3F));
            }
            else if (c >= 0xD800 && c <= 0xDFFF) {
                Py_UCS4 low = i + 1 < n ? PyUnicode_READ(kind, data, i + 1) : 0;
                if (c <= 0xDBFF && low >= 0xDC00 && low <= 0xDFFF) {
                    Py_UCS4 joined = 0x10000 + ((c - 0xD800) << 10) + (low - 0xDC00);
                    *out++ = (char)(0xF0 | (joined >> 18));
                    *out++ = (char)(0x80 | ((joined >> 12) & 0x3F));
                    *out++ = (char)(0x80 | ((joined >> 6) & 0x3F));
                    *out++ = (char)(0x80 | (joined & 0x3F));
                    i++;
                }
                else {
                    *out++ = '?';
                }
            }
            else if (c < 0x10000) {
                *out++ = (char)(0xE0 | (c >> 12));
                *out++ = (char)(0x80 | ((c >> 6) & 0x3F));
                *out++ = (char)(0x80 | (c & 0x3F));
            }
            else {
                *out++ = (char)(0xF0 | (c >> 18));
                *out++ = (char)(0x80 | ((c >> 12) & 0x3F));
                *out++ = (char)(0x80 | ((c >> 6) & 0x3F));
                *out++ = (char)(0x80 | (c & 0x3F));
            }
        }
    }
    *out++ = '"';
    b->len = out - b->data;
    return 0;
}

static int
json_put_ll(Buf *b, long long v)
{
    char digits[24];
    return buf_put(b, digits, format_ll(digits, v));
}

/*
 * The whole JSON header (header_json.encode_json_header) appended to b: fastjson's bean order, nulls left
 * out. map NULL means no "extFields" at all; its entries are written in `order` (NULL: their own order).
 * 0 done, -1 error.
 */
static int
write_json_header(Buf *b, long long code, PyObject *language_name, long long version, long long opaque,
                  long long flag, PyObject *remark, const Entries *map, const Py_ssize_t *order)
{
    if (BUF_LIT(b, "{\"code\":") < 0 || json_put_ll(b, code) < 0) {
        return -1;
    }
    if (map != NULL) {
        if (BUF_LIT(b, ",\"extFields\":{") < 0) {
            return -1;
        }
        for (Py_ssize_t i = 0; i < map->n; i++) {
            const Entry *x = &map->v[order != NULL ? order[i] : i];
            if ((i > 0 && BUF_LIT(b, ",") < 0) || json_put_str(b, x->key) < 0 || BUF_LIT(b, ":") < 0) {
                return -1;
            }
            if (x->text != NULL ? json_put_str(b, x->text) < 0
                                : (BUF_LIT(b, "\"") < 0 || json_put_ll(b, x->num) < 0 || BUF_LIT(b, "\"") < 0)) {
                return -1;
            }
        }
        if (BUF_LIT(b, "}") < 0) {
            return -1;
        }
    }
    if (BUF_LIT(b, ",\"flag\":") < 0 || json_put_ll(b, flag) < 0 || BUF_LIT(b, ",\"language\":") < 0 ||
        json_put_str(b, language_name) < 0 || BUF_LIT(b, ",\"opaque\":") < 0 || json_put_ll(b, opaque) < 0) {
        return -1;
    }
    if (remark != Py_None && (BUF_LIT(b, ",\"remark\":") < 0 || json_put_str(b, remark) < 0)) {
        return -1;
    }
    if (BUF_LIT(b, ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":") < 0 || json_put_ll(b, version) < 0 ||
        BUF_LIT(b, "}") < 0) {
        return -1;
    }
    return 0;
}

/* Java HashMap order of map's entries, into *order (allocated; free it). 1 done, 0 decline, -1 error. */
static int
java_order(const Entries *map, PyObject *capacity, Py_ssize_t **order)
{
    *order = PyMem_Malloc((size_t)(map->n > 0 ? map->n : 1) * (sizeof(Py_ssize_t) + sizeof(uint32_t)));
    if (*order == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    uint32_t *hashes = (uint32_t *)(*order + map->n);
    for (Py_ssize_t i = 0; i < map->n; i++) {
        hashes[i] = map->v[i].hash;
    }
    return hashmap_positions(hashes, map->n, capacity, *order);
}

/*
 * encode_json_header(code, language_name, version, opaque, flag, remark, ext, java_order, capacity) -> bytes
 *
 * ext is None (no "extFields" at all) or a dict of str to str, written in its own order or, with java_order,
 * in the order of a Java HashMap created with `capacity`.
 */
static PyObject *
sp_encode_json_header(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    long long code, version, opaque, flag;
    if (nargs != 9 || !exact_ll(args[0], &code) || !exact_ll(args[2], &version) || !exact_ll(args[3], &opaque) ||
        !exact_ll(args[4], &flag) || !PyUnicode_CheckExact(args[1]) ||
        (args[5] != Py_None && !PyUnicode_CheckExact(args[5])) || (args[6] != Py_None && !PyDict_Check(args[6]))) {
        return DECLINE();
    }
    int ordered = PyObject_IsTrue(args[7]);
    if (ordered < 0) {
        return NULL;
    }
    Entries e;
    ents_init(&e);
    Buf b;
    buf_init(&b);
    Py_ssize_t *order = NULL;
    int rc = 1;
    if (args[6] != Py_None) {
        rc = ents_from_dict(&e, args[6], 0);
        if (rc > 0 && ordered) {
            rc = java_order(&e, args[8], &order);
        }
    }
    if (rc > 0) {
        rc = write_json_header(&b, code, args[1], version, opaque, flag, args[5], args[6] != Py_None ? &e : NULL,
                               order) < 0 ? -1 : 1;
    }
    PyObject *result = buf_result(&b, rc);
    buf_free(&b);
    PyMem_Free(order);
    ents_free(&e);
    return result;
}

/*
 * RemotingCommand.encode_header into b: the typed header rendered by `plan` either ahead of the ext map
 * (the binary fast path, `fast`) or merged into it (RemotingCommand._map_for_wire), the map in Java
 * HashMap order, then either serialization. 1 done, 0 decline, -1 error.
 */
static int
build_header(Buf *b, PyObject *serialize_obj, PyObject *code_obj, PyObject *language, PyObject *version_obj,
             PyObject *opaque_obj, PyObject *flag_obj, PyObject *remark, PyObject *header, PyObject *plan, int fast,
             PyObject *ext)
{
    long long serialize, code, version, opaque, flag;
    if (!any_ll(serialize_obj, &serialize) || (serialize != 0 && serialize != 1) || !exact_ll(code_obj, &code) ||
        !exact_ll(version_obj, &version) || !exact_ll(opaque_obj, &opaque) || !exact_ll(flag_obj, &flag) ||
        (remark != Py_None && !PyUnicode_CheckExact(remark)) || (ext != Py_None && !PyDict_Check(ext)) ||
        !PyLong_Check(language) || PyLong_CheckExact(language) /* not a LanguageCode */ ||
        (fast && serialize != 1) /* the fast path is a binary-only layout */) {
        return 0;
    }
    Entries pre, map;
    ents_init(&pre);
    ents_init(&map);
    PyObject *capacity = NULL, *name = NULL;
    Py_ssize_t *order = NULL;
    int rc = 1;
    int has_map;
    if (ext != Py_None) {
        capacity = PyObject_GetAttr(ext, s_capacity);
        if (capacity == NULL) {
            if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
                PyErr_Clear(); /* not an ExtFields: the reference words the error */
                rc = 0;
            }
            else {
                rc = -1;
            }
            goto done;
        }
    }
    if (header != Py_None && fast) {
        rc = ents_render(&pre, header, plan, 0);
        if (rc > 0 && ext != Py_None) {
            rc = ents_from_dict(&map, ext, 0);
        }
        has_map = ext != Py_None;
    }
    else if (header != Py_None) {
        rc = ents_render(&map, header, plan, 1);
        if (rc > 0 && ext != Py_None) {
            rc = ents_from_dict(&map, ext, 1);
        }
        has_map = map.n > 0 || ext != Py_None;
    }
    else {
        if (ext != Py_None) {
            rc = ents_from_dict(&map, ext, 0);
        }
        has_map = ext != Py_None;
    }
    if (rc > 0) {
        rc = java_order(&map, capacity != NULL ? capacity : Py_None, &order);
    }
    if (rc <= 0) {
        goto done;
    }
    if (serialize == 1) {
        rc = write_binary_header(b, code, language, version, opaque, flag, remark, &pre, &map, order);
    }
    else {
        name = PyObject_GetAttr(language, s_name);
        if (name == NULL || !PyUnicode_CheckExact(name)) {
            PyErr_Clear();
            rc = 0;
            goto done;
        }
        rc = write_json_header(b, code, name, version, opaque, flag, remark, has_map ? &map : NULL, order) < 0 ? -1 : 1;
    }
done:
    Py_XDECREF(capacity);
    Py_XDECREF(name);
    PyMem_Free(order);
    ents_free(&pre);
    ents_free(&map);
    return rc;
}

/* encode_header(serialize, code, language, version, opaque, flag, remark, header, plan, fast, ext) -> bytes */
static PyObject *
sp_encode_header(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 11) {
        return DECLINE();
    }
    int fast = PyObject_IsTrue(args[9]);
    if (fast < 0) {
        return NULL;
    }
    Buf b;
    buf_init(&b);
    int rc = build_header(&b, args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7], args[8], fast,
                          args[10]);
    PyObject *result = buf_result(&b, rc);
    buf_free(&b);
    return result;
}

/* RemotingCommand's attributes, interned once. */
static PyObject *a_code, *a_language, *a_version, *a_opaque, *a_flag, *a_remark, *a_ext_fields, *a_custom_header,
    *a_body, *a_serialize_type, *a_plans_cache, *a_plans;

/*
 * The header's (declared plan, fast-path plan) from its class's own cache (CommandHeader._plans_for_c);
 * a new reference, None when the class renders its entries itself, NULL on error.
 */
static PyObject *
plans_of(PyObject *header)
{
    PyObject *dict = Py_TYPE(header)->tp_dict; /* the class's own namespace: a subclass has its own plans */
    if (dict != NULL && PyDict_Check(dict)) {
        PyObject *cached = PyDict_GetItemWithError(dict, a_plans_cache);
        if (cached != NULL) {
            return Py_NewRef(cached);
        }
        if (PyErr_Occurred()) {
            return NULL;
        }
    }
    return PyObject_CallMethodNoArgs(header, a_plans);
}

/* encode_command(cmd) -> the whole frame (RemotingCommand.encode), or None to decline. */
static PyObject *
sp_encode_command(PyObject *module, PyObject *cmd)
{
    (void)module;
    PyObject *names[10] = {a_serialize_type, a_code, a_language, a_version, a_opaque,
                           a_flag,           a_remark, a_custom_header, a_ext_fields, a_body};
    PyObject *v[10] = {NULL};
    PyObject *plans = NULL, *result = NULL;
    Buf b;
    buf_init(&b);
    int rc = 0;
    for (int i = 0; i < 10; i++) {
        v[i] = PyObject_GetAttr(cmd, names[i]);
        if (v[i] == NULL) {
            rc = -1;
            goto done;
        }
    }
    PyObject *header = v[7], *body = v[9];
    if (!PyBytes_CheckExact(body)) {
        goto done;
    }
    PyObject *plan = Py_None;
    int fast = 0;
    if (header != Py_None) {
        plans = plans_of(header);
        if (plans == NULL) {
            rc = -1;
            goto done;
        }
        if (!PyTuple_Check(plans) || PyTuple_GET_SIZE(plans) != 2 || !PyTuple_Check(PyTuple_GET_ITEM(plans, 1))) {
            goto done;
        }
        long long serialize;
        /* RemotingCommand._uses_fast_path: ROCKETMQ and a header with FAST_FIELDS (one step per field) */
        fast = any_ll(v[0], &serialize) && serialize == 1 && PyTuple_GET_SIZE(PyTuple_GET_ITEM(plans, 1)) > 0;
        plan = PyTuple_GET_ITEM(plans, fast ? 1 : 0);
    }
    if (buf_put(&b, "\0\0\0\0\0\0\0\0", 8) < 0) { /* the prefix, filled in below */
        rc = -1;
        goto done;
    }
    rc = build_header(&b, v[0], v[1], v[2], v[3], v[4], v[5], v[6], header, plan, fast, v[8]);
    if (rc <= 0) {
        goto done;
    }
    Py_ssize_t header_len = b.len - 8;
    if (header_len > 0xFFFFFF) {
        PyErr_Format(WireError, "header of %zd bytes exceeds the 24-bit header length field", header_len);
        rc = -1;
        goto done;
    }
    Py_ssize_t body_len = PyBytes_GET_SIZE(body);
    if (body_len > 0xFFFFFFFFLL - 4 - header_len) {
        rc = 0; /* the reference's struct.pack refuses that */
        goto done;
    }
    long long serialize = 0;
    any_ll(v[0], &serialize);
    result = PyBytes_FromStringAndSize(NULL, b.len + body_len);
    if (result == NULL) {
        rc = -1;
        goto done;
    }
    char *out = PyBytes_AS_STRING(result);
    put_be32(b.data, 4 + header_len + body_len);
    put_be32(b.data + 4, (serialize << 24) | header_len);
    memcpy(out, b.data, (size_t)b.len);
    memcpy(out + b.len, PyBytes_AS_STRING(body), (size_t)body_len);
done:
    for (int i = 0; i < 10; i++) {
        Py_XDECREF(v[i]);
    }
    Py_XDECREF(plans);
    buf_free(&b);
    if (result == NULL && rc == 0) {
        return DECLINE();
    }
    return result;
}

/* ---------------------------------------------------------------------------------------------------- */
/* the ROCKETMQ binary header, read */

static int16_t
rd16(const unsigned char *p)
{
    return (int16_t)(uint16_t)(((unsigned)p[0] << 8) | p[1]);
}

static int32_t
rd32(const unsigned char *p)
{
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]);
}

/* Replace a pending UnicodeDecodeError by WireError("<what> ...: <reason>"); other errors stay. */
static void
utf8_error(const char *what, Py_ssize_t offset)
{
    if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        return;
    }
    PyObject *exc = take_exception();
    if (exc == NULL) {
        return;
    }
    PyObject *reason = PyUnicodeDecodeError_GetReason(exc);
    Py_DECREF(exc);
    if (reason == NULL) {
        return;
    }
    if (offset < 0) {
        PyErr_Format(WireError, "%s is not valid UTF-8: %U", what, reason);
    }
    else {
        PyErr_Format(WireError, "%s near offset %zd is not valid UTF-8: %U", what, offset, reason);
    }
    Py_DECREF(reason);
}

static PyObject *
decode_utf8(const unsigned char *p, Py_ssize_t n)
{
    if (n == 1 && p[0] < 0x80) {
        return PyUnicode_FromOrdinal(p[0]); /* a cached one-character str */
    }
    return PyUnicode_DecodeUTF8((const char *)p, n, NULL);
}

/* Ext entries in d[pos:end], exactly as header_binary.decode_entries reads them (offsets relative to d). */
static PyObject *
decode_entries_impl(const unsigned char *d, Py_ssize_t pos, Py_ssize_t end)
{
    PyObject *list = PyList_New(0);
    if (list == NULL) {
        return NULL;
    }
    while (pos < end) {
        if (end - pos < 6) {
            PyErr_Format(WireError, "ext map ends inside an entry header at offset %zd", pos);
            goto fail;
        }
        int klen = rd16(d + pos);
        pos += 2;
        if (klen < 0 || pos + klen + 4 > end) {
            PyErr_Format(WireError, "ext key length %d at offset %zd runs past the ext map", klen, pos - 2);
            goto fail;
        }
        PyObject *key = decode_utf8(d + pos, klen);
        if (key == NULL) {
            utf8_error("ext entry", pos);
            goto fail;
        }
        pos += klen;
        int32_t vlen = rd32(d + pos);
        pos += 4;
        if (vlen < 0 || pos + vlen > end) {
            PyErr_Format(WireError, "ext value length %d for key %R runs past the ext map", (int)vlen, key);
            Py_DECREF(key);
            goto fail;
        }
        PyObject *value = decode_utf8(d + pos, vlen);
        if (value == NULL) {
            Py_DECREF(key);
            utf8_error("ext entry", pos);
            goto fail;
        }
        pos += vlen;
        PyObject *pair = PyTuple_New(2);
        if (pair == NULL) {
            Py_DECREF(key);
            Py_DECREF(value);
            goto fail;
        }
        PyTuple_SET_ITEM(pair, 0, key);
        PyTuple_SET_ITEM(pair, 1, value);
        int rc = PyList_Append(list, pair);
        Py_DECREF(pair);
        if (rc < 0) {
            goto fail;
        }
    }
    return list;
fail:
    Py_DECREF(list);
    return NULL;
}

/* decode_entries(data: bytes, start, end) -> list[tuple[str, str]] */
static PyObject *
sp_decode_entries(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3 || !PyBytes_CheckExact(args[0]) || !PyLong_CheckExact(args[1]) || !PyLong_CheckExact(args[2])) {
        return DECLINE();
    }
    Py_ssize_t size = PyBytes_GET_SIZE(args[0]);
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    Py_ssize_t end = PyLong_AsSsize_t(args[2]);
    if ((start == -1 || end == -1) && PyErr_Occurred()) {
        PyErr_Clear();
        return DECLINE();
    }
    if (start < 0 || end < start || end > size) {
        return DECLINE(); /* the reference's slicing semantics are not worth copying */
    }
    return decode_entries_impl((const unsigned char *)PyBytes_AS_STRING(args[0]), start, end);
}

/* ---------------------------------------------------------------------------------------------------- */
/* typed headers: render and parse */

/* render(header, plan) -> list[tuple[str, str]] (CommandHeader._render), or None to decline. */
static PyObject *
sp_render(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2) {
        return DECLINE();
    }
    Entries e;
    ents_init(&e);
    PyObject *result = NULL;
    int rc = ents_render(&e, args[0], args[1], 0);
    if (rc == 0) {
        result = DECLINE();
    }
    if (rc <= 0) {
        goto done;
    }
    result = PyList_New(e.n);
    if (result == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < e.n; i++) {
        PyObject *text = e.v[i].text != NULL ? Py_NewRef(e.v[i].text) : int_to_str_ll(e.v[i].num);
        PyObject *items[2] = {Py_NewRef(e.v[i].key), text};
        PyObject *pair = tuple_of(items, 2);
        if (pair == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, i, pair);
    }
done:
    ents_free(&e);
    return result;
}

/*
 * One field's value from its ext text, as CommandHeader.from_ext computes it: str as is, up to 18 ASCII
 * digits as an int when it fits the field's Java type (`bits` wide, signed), "true" in any ASCII case as a
 * bool; everything else through the reference's parse_value(kind, text, java, bits), which also words the
 * error for a number out of range. A new reference, or NULL with the exception parse_value raised.
 */
static PyObject *
parse_field(PyObject *kind, PyObject *text, PyObject *java, PyObject *parse_value, PyObject *bits)
{
    if (kind == (PyObject *)&PyUnicode_Type) {
        return Py_NewRef(text);
    }
    if (kind == (PyObject *)&PyLong_Type && PyUnicode_GET_LENGTH(text) <= 18 && ascii_digits(text)) {
        const Py_UCS1 *p = PyUnicode_1BYTE_DATA(text); /* fits a long long: the value int(text) gives */
        long long v = 0;
        for (Py_ssize_t i = 0; i < PyUnicode_GET_LENGTH(text); i++) {
            v = v * 10 + (p[i] - '0');
        }
        long long width = 64;
        if (!any_ll(bits, &width)) {
            width = 0; /* not a plain width: the reference decides */
        }
        if (width >= 64 || (width > 0 && v <= (1LL << (width - 1)) - 1)) {
            return PyLong_FromLongLong(v);
        }
    }
    else if (kind == (PyObject *)&PyBool_Type && PyUnicode_IS_ASCII(text)) {
        return Py_NewRef(ascii_true(text) ? Py_True : Py_False);
    }
    return PyObject_CallFunctionObjArgs(parse_value, kind, text, java, bits, NULL);
}

/*
 * from_ext(cls, fields, ext: dict, parse_value) -> header (CommandHeader.from_ext), or None to decline;
 * fields = ((attr, java, kind, required, bits), ...). A mapping that is not a dict or a value that is not a
 * str is left to the reference.
 */
static PyObject *
sp_from_ext(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 4 || !PyTuple_Check(args[1]) || !PyDict_CheckExact(args[2])) {
        return DECLINE();
    }
    PyObject *cls = args[0];
    PyObject *fields = args[1];
    PyObject *ext = args[2];
    PyObject *values = PyDict_New();
    if (values == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields); i++) {
        PyObject *field = PyTuple_GET_ITEM(fields, i);
        if (!PyTuple_Check(field) || PyTuple_GET_SIZE(field) != 5) {
            Py_DECREF(values);
            return DECLINE();
        }
        PyObject *java = PyTuple_GET_ITEM(field, 1);
        PyObject *text = PyDict_GetItemWithError(ext, java); /* borrowed */
        if (text == NULL) {
            if (PyErr_Occurred()) {
                Py_DECREF(values);
                return NULL;
            }
            int required = PyObject_IsTrue(PyTuple_GET_ITEM(field, 3));
            if (required != 0) {
                Py_DECREF(values);
                if (required > 0) {
                    PyObject *name = PyObject_GetAttrString(cls, "__name__");
                    if (name != NULL) {
                        PyErr_Format(WireError, "%S: the custom field <%S> is null", name, java);
                        Py_DECREF(name);
                    }
                }
                return NULL;
            }
            continue;
        }
        if (!PyUnicode_CheckExact(text) || str_ready(text) < 0) {
            Py_DECREF(values);
            if (PyErr_Occurred()) {
                return NULL;
            }
            return DECLINE(); /* None means absent to the reference; other types are its business */
        }
        PyObject *value = parse_field(PyTuple_GET_ITEM(field, 2), text, java, args[3], PyTuple_GET_ITEM(field, 4));
        if (value == NULL) {
            Py_DECREF(values);
            return NULL;
        }
        int rc = PyDict_SetItem(values, PyTuple_GET_ITEM(field, 0), value);
        Py_DECREF(value);
        if (rc < 0) {
            Py_DECREF(values);
            return NULL;
        }
    }
    PyObject *header = PyObject_Call(cls, empty_tuple, values);
    Py_DECREF(values);
    if (header == NULL) {
        return NULL;
    }
    PyObject *ok = PyObject_CallMethodNoArgs(header, s_check);
    if (ok == NULL) {
        Py_DECREF(header);
        return NULL;
    }
    Py_DECREF(ok);
    return header;
}

/* ---------------------------------------------------------------------------------------------------- */
/* building the decoded record */

/*
 * An empty ExtFields (a dict subclass with a `capacity` slot), made as dict.__new__ makes it; the caller
 * fills it and sets the capacity, which is all ExtFields.__init__ would have done.
 */
static PyObject *
new_ext_fields(PyObject *ext_type)
{
    if (!PyType_Check(ext_type) || !PyType_IsSubtype((PyTypeObject *)ext_type, &PyDict_Type)) {
        PyErr_SetString(PyExc_TypeError, "ExtFields must be a dict subclass");
        return NULL;
    }
    return ((PyTypeObject *)ext_type)->tp_new((PyTypeObject *)ext_type, empty_tuple, NULL);
}

/* Set ext.capacity to the inferred capacity (javahash.infer_capacity); 1 done, 0 decline, -1 error. */
static int
set_inferred_capacity(PyObject *ext, PyObject *known)
{
    Py_ssize_t n = PyDict_GET_SIZE(ext);
    uint32_t stack[64];
    uint32_t *hashes = n <= 64 ? stack : PyMem_Malloc((size_t)n * sizeof *hashes);
    if (hashes == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = 0;
    if (dict_key_hashes(ext, hashes, NULL, NULL)) {
        PyObject *capacity = capacity_for(hashes, n, known);
        if (capacity != NULL) {
            rc = PyObject_SetAttr(ext, s_capacity, capacity) < 0 ? -1 : 1;
            Py_DECREF(capacity);
        }
        else if (PyErr_Occurred()) {
            rc = -1;
        }
    }
    if (hashes != stack) {
        PyMem_Free(hashes);
    }
    return rc;
}

/* A HeaderFields namedtuple from 8 new references, made as tuple.__new__ makes a tuple subclass. */
static PyObject *
new_header_fields(PyObject *type, PyObject **items)
{
    PyObject *t = NULL;
    for (int i = 0; i < 8; i++) {
        if (items[i] == NULL) {
            goto fail;
        }
    }
    if (!PyType_Check(type) || !PyType_IsSubtype((PyTypeObject *)type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "HeaderFields must be a tuple subclass");
        goto fail;
    }
    t = ((PyTypeObject *)type)->tp_alloc((PyTypeObject *)type, 8);
    if (t == NULL) {
        goto fail;
    }
    for (int i = 0; i < 8; i++) {
        PyTuple_SET_ITEM(t, i, items[i]);
    }
    return t;
fail:
    for (int i = 0; i < 8; i++) {
        Py_XDECREF(items[i]);
    }
    return NULL;
}

/* ---------------------------------------------------------------------------------------------------- */
/* the binary header, read into the record, the fast-path header split off */

/* Binary decode context, built once by header_binary._decode_context(). */
enum {
    BX_HEADER_FIELDS,
    BX_EXT_FIELDS,
    BX_LANGUAGES,     /* dict: int -> LanguageCode */
    BX_LANGUAGE_CODE, /* LanguageCode, called for values the dict does not hold */
    BX_KNOWN,         /* javahash._KNOWN_CAPACITIES */
    BX_REQUESTS,      /* dict: request code -> candidates */
    BX_RESPONSES,     /* candidates of responses */
    BX_CODEC_ERROR,
    BX_PARSE_VALUE,
    BX_SIZE
};
/*
 * A candidate: (cls, FAST_FIELDS, ((attr, java, kind, required, bits, index in FAST_FIELDS or -1), ...),
 * fast plan, init), init being cls.__init__ when cls(**values) amounts to object.__new__(cls) then init (else
 * None).
 */
#define MAX_FAST_FIELDS 64

/* Whether the pending exception is a CodecError (or WireError); clears it if so. */
static int
swallow_codec_error(PyObject *codec_error)
{
    if (PyErr_ExceptionMatches(codec_error) || PyErr_ExceptionMatches(WireError)) {
        PyErr_Clear();
        return 1;
    }
    return 0;
}

/*
 * Whether text is what render() makes of value: 1 yes, 0 no, 2 a value type not handled here, -1 error.
 */
static int
renders_as(PyObject *value, PyObject *text)
{
    if (PyUnicode_CheckExact(value)) {
        return PyUnicode_Compare(value, text) == 0;
    }
    if (PyBool_Check(value)) {
        return PyUnicode_Compare(value == Py_True ? s_true : s_false, text) == 0;
    }
    if (PyLong_CheckExact(value)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow == 0) {
            if (v == -1 && PyErr_Occurred()) {
                return -1;
            }
            char digits[24];
            int n = format_ll(digits, v);
            return PyUnicode_IS_ASCII(text) && PyUnicode_GET_LENGTH(text) == n &&
                   memcmp(PyUnicode_1BYTE_DATA(text), digits, (size_t)n) == 0;
        }
        PyObject *s = PyObject_Str(value);
        if (s == NULL) {
            return -1;
        }
        int eq = PyUnicode_Compare(s, text) == 0;
        Py_DECREF(s);
        return eq;
    }
    return 2;
}

/*
 * cls(**{names[i]: argv[1 + i]}) (argv[0] is free for the new object). With `init` (cls.__init__, given when
 * that call amounts to object.__new__(cls) followed by it) the keyword arguments go to it directly, without
 * the dict type.__call__ would build; otherwise cls is called with the dict. A new reference or NULL.
 */
static PyObject *
construct(PyObject *cls, PyObject *init, PyObject **argv, PyObject **names, Py_ssize_t k)
{
    if (init == Py_None) {
        PyObject *kwargs = PyDict_New();
        for (Py_ssize_t i = 0; kwargs != NULL && i < k; i++) {
            if (PyDict_SetItem(kwargs, names[i], argv[1 + i]) < 0) {
                Py_CLEAR(kwargs);
            }
        }
        if (kwargs == NULL) {
            return NULL;
        }
        PyObject *obj = PyObject_Call(cls, empty_tuple, kwargs);
        Py_DECREF(kwargs);
        return obj;
    }
    PyObject *kwnames = PyTuple_New(k);
    if (kwnames == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyTuple_SET_ITEM(kwnames, i, Py_NewRef(names[i]));
    }
    PyObject *obj = ((PyTypeObject *)cls)->tp_new((PyTypeObject *)cls, empty_tuple, NULL);
    if (obj != NULL) {
        argv[0] = obj;
        PyObject *res = PyObject_Vectorcall(init, argv, 1, kwnames);
        if (res == NULL) {
            Py_CLEAR(obj);
        }
        else if (res != Py_None) {
            PyErr_Format(PyExc_TypeError, "__init__() should return None, not '%.200s'", Py_TYPE(res)->tp_name);
            Py_DECREF(res);
            Py_CLEAR(obj);
        }
        else {
            Py_DECREF(res);
        }
    }
    Py_DECREF(kwnames);
    return obj;
}

/*
 * header_binary.split_fast_path for one candidate class. 1: *header set and *taken entries are its;
 * 0: the class did not write this prefix; 2: decline the frame; -1: error.
 */
static int
try_fast_header(PyObject *cand, PyObject *entries, PyObject *ctx, PyObject **header, Py_ssize_t *taken)
{
    if (!PyTuple_Check(cand) || PyTuple_GET_SIZE(cand) != 5 || !PyTuple_Check(PyTuple_GET_ITEM(cand, 1)) ||
        !PyTuple_Check(PyTuple_GET_ITEM(cand, 2)) || !PyTuple_Check(PyTuple_GET_ITEM(cand, 3))) {
        return 2;
    }
    PyObject *cls = PyTuple_GET_ITEM(cand, 0);
    PyObject *order = PyTuple_GET_ITEM(cand, 1);
    PyObject *fields = PyTuple_GET_ITEM(cand, 2);
    PyObject *plan = PyTuple_GET_ITEM(cand, 3);
    PyObject *codec_error = PyTuple_GET_ITEM(ctx, BX_CODEC_ERROR);
    Py_ssize_t n_order = PyTuple_GET_SIZE(order);
    if (n_order > MAX_FAST_FIELDS) {
        return 2;
    }
    for (Py_ssize_t i = 0; i < n_order; i++) {
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(order, i))) {
            return 2;
        }
    }
    /* the prefix: entries following the field order, each field at most once (_fast_prefix_length) */
    Py_ssize_t where[MAX_FAST_FIELDS]; /* FAST_FIELDS index -> position in entries, or -1 */
    for (Py_ssize_t i = 0; i < n_order; i++) {
        where[i] = -1;
    }
    Py_ssize_t n = 0, next = 0;
    for (; n < PyList_GET_SIZE(entries); n++) {
        PyObject *key = PyTuple_GET_ITEM(PyList_GET_ITEM(entries, n), 0);
        Py_ssize_t found = -1;
        for (Py_ssize_t i = next; i < n_order && found < 0; i++) {
            if (PyUnicode_Compare(PyTuple_GET_ITEM(order, i), key) == 0) {
                found = i;
            }
        }
        if (found < 0) {
            break;
        }
        where[found] = n;
        next = found + 1;
    }
    if (n == 0) {
        return 0;
    }
    /* the header from those entries (from_ext of dict(prefix)); a CodecError just means "not this class" */
    Py_ssize_t n_fields = PyTuple_GET_SIZE(fields);
    if (n_fields > MAX_FAST_FIELDS) {
        return 2;
    }
    PyObject *argv[1 + MAX_FAST_FIELDS]; /* the new object, then each present field's value (owned) */
    PyObject *names[MAX_FAST_FIELDS];    /* and its attribute name (borrowed) */
    Py_ssize_t k = 0;
    PyObject *built = NULL;
    int rc = 0;
    for (Py_ssize_t i = 0; i < n_fields; i++) {
        PyObject *field = PyTuple_GET_ITEM(fields, i);
        if (!PyTuple_Check(field) || PyTuple_GET_SIZE(field) != 6 || !PyLong_CheckExact(PyTuple_GET_ITEM(field, 5)) ||
            !PyUnicode_CheckExact(PyTuple_GET_ITEM(field, 0))) {
            rc = 2;
            goto release;
        }
        Py_ssize_t index = PyLong_AsSsize_t(PyTuple_GET_ITEM(field, 5));
        if (index == -1 && PyErr_Occurred()) {
            rc = -1;
            goto release;
        }
        PyObject *text = NULL;
        if (index >= 0 && index < n_order && where[index] >= 0) {
            text = PyTuple_GET_ITEM(PyList_GET_ITEM(entries, where[index]), 1);
        }
        if (text == NULL) {
            int required = PyObject_IsTrue(PyTuple_GET_ITEM(field, 3));
            if (required != 0) {
                rc = required < 0 ? -1 : 0;
                goto release;
            }
            continue;
        }
        PyObject *value = parse_field(PyTuple_GET_ITEM(field, 2), text, PyTuple_GET_ITEM(field, 1),
                                      PyTuple_GET_ITEM(ctx, BX_PARSE_VALUE), PyTuple_GET_ITEM(field, 4));
        if (value == NULL) {
            rc = swallow_codec_error(codec_error) ? 0 : -1;
            goto release;
        }
        argv[1 + k] = value;
        names[k] = PyTuple_GET_ITEM(field, 0);
        k++;
    }
    built = construct(cls, PyTuple_GET_ITEM(cand, 4), argv, names, k);
    if (built == NULL) {
        rc = swallow_codec_error(codec_error) ? 0 : -1;
    }
release:
    for (Py_ssize_t i = 0; i < k; i++) {
        Py_DECREF(argv[1 + i]);
    }
    if (built == NULL) {
        return rc;
    }
    PyObject *ok = PyObject_CallMethodNoArgs(built, s_check);
    if (ok == NULL) {
        Py_DECREF(built);
        return swallow_codec_error(codec_error) ? 0 : -1;
    }
    Py_DECREF(ok);
    /* accepted only if it renders back to the very same entries (fast_items() == prefix) */
    k = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(plan); i++) {
        PyObject *step = PyTuple_GET_ITEM(plan, i);
        if (!PyTuple_Check(step) || PyTuple_GET_SIZE(step) < 2 || !PyUnicode_CheckExact(PyTuple_GET_ITEM(step, 1))) {
            Py_DECREF(built);
            return 2;
        }
        PyObject *value = PyObject_GetAttr(built, PyTuple_GET_ITEM(step, 0));
        if (value == NULL) {
            Py_DECREF(built);
            return -1;
        }
        if (value == Py_None) {
            Py_DECREF(value);
            continue;
        }
        int same = 0;
        if (k < n) {
            PyObject *entry = PyList_GET_ITEM(entries, k);
            same = PyUnicode_Compare(PyTuple_GET_ITEM(step, 1), PyTuple_GET_ITEM(entry, 0)) == 0;
            if (same) {
                same = renders_as(value, PyTuple_GET_ITEM(entry, 1));
            }
        }
        Py_DECREF(value);
        if (same != 1) {
            Py_DECREF(built);
            return same;
        }
        k++;
    }
    if (k != n) {
        Py_DECREF(built);
        return 0;
    }
    *header = built;
    *taken = n;
    return 1;
}

/*
 * header_binary.decode_binary_header of the size bytes at d, into out[8] (HeaderFields' order, new
 * references). 1 done, 0 decline, -1 error (offsets in messages are relative to d, as in the reference).
 */
static int
decode_binary_region(const unsigned char *d, Py_ssize_t size, PyObject *ctx, PyObject **out)
{
    if (!PyTuple_Check(ctx) || PyTuple_GET_SIZE(ctx) != BX_SIZE) {
        return 0;
    }
    if (size < FIXED_SIZE + 4) {
        PyErr_Format(WireError, "binary header of %zd bytes is shorter than the fixed part (%d)", size,
                     FIXED_SIZE + 4);
        return -1;
    }
    int code = rd16(d);
    int lang = (int8_t)d[2];
    int version = rd16(d + 3);
    int32_t opaque = rd32(d + 5);
    int32_t flag = rd32(d + 9);
    int32_t remark_len = rd32(d + 13);
    Py_ssize_t pos = FIXED_SIZE;
    if (remark_len < 0 || pos + remark_len + 4 > size) {
        PyErr_Format(WireError, "remark length %d runs past the header of %zd bytes", (int)remark_len, size);
        return -1;
    }
    PyObject *remark = NULL, *entries = NULL, *fast_header = NULL, *code_obj = NULL, *language = NULL;
    PyObject *ext = NULL;
    if (remark_len > 0) {
        remark = decode_utf8(d + pos, remark_len);
        if (remark == NULL) {
            utf8_error("remark", -1);
            return -1;
        }
    }
    else {
        remark = Py_NewRef(Py_None);
    }
    pos += remark_len;
    int32_t ext_len = rd32(d + pos);
    pos += 4;
    if (ext_len < 0 || pos + ext_len > size) {
        PyErr_Format(WireError, "ext map length %d runs past the header of %zd bytes", (int)ext_len, size);
        goto fail;
    }
    entries = ext_len > 0 ? decode_entries_impl(d, pos, pos + ext_len) : PyList_New(0);
    code_obj = PyLong_FromLong(code);
    if (entries == NULL || code_obj == NULL) {
        goto fail;
    }
    Py_ssize_t taken = 0;
    if (PyList_GET_SIZE(entries) > 0) {
        PyObject *candidates;
        if (flag & 1) {
            candidates = PyTuple_GET_ITEM(ctx, BX_RESPONSES);
        }
        else {
            PyObject *requests = PyTuple_GET_ITEM(ctx, BX_REQUESTS);
            if (!PyDict_Check(requests)) {
                goto decline;
            }
            candidates = PyDict_GetItemWithError(requests, code_obj);
            if (candidates == NULL && PyErr_Occurred()) {
                goto fail;
            }
        }
        if (candidates != NULL) {
            if (!PyTuple_Check(candidates)) {
                goto decline;
            }
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(candidates); i++) {
                int rc = try_fast_header(PyTuple_GET_ITEM(candidates, i), entries, ctx, &fast_header, &taken);
                if (rc < 0) {
                    goto fail;
                }
                if (rc == 2) {
                    goto decline;
                }
                if (rc == 1) {
                    break;
                }
            }
        }
    }
    if (fast_header == NULL) {
        fast_header = Py_NewRef(Py_None);
    }
    /* the language: _LANGUAGES.get(lang) or LanguageCode(lang) */
    PyObject *lang_obj = PyLong_FromLong(lang);
    if (lang_obj == NULL) {
        goto fail;
    }
    PyObject *languages = PyTuple_GET_ITEM(ctx, BX_LANGUAGES);
    language = PyDict_Check(languages) ? PyDict_GetItemWithError(languages, lang_obj) : NULL;
    if (language != NULL) {
        Py_INCREF(language);
    }
    else if (!PyErr_Occurred()) {
        language = PyObject_CallOneArg(PyTuple_GET_ITEM(ctx, BX_LANGUAGE_CODE), lang_obj);
    }
    Py_DECREF(lang_obj);
    if (language == NULL) {
        goto fail;
    }
    /* what the fast path left: the ext map (ext_from_entries) */
    if (PyList_GET_SIZE(entries) > taken) {
        ext = new_ext_fields(PyTuple_GET_ITEM(ctx, BX_EXT_FIELDS));
        if (ext == NULL) {
            goto fail;
        }
        for (Py_ssize_t i = taken; i < PyList_GET_SIZE(entries); i++) {
            PyObject *pair = PyList_GET_ITEM(entries, i);
            if (PyDict_SetItem(ext, PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1)) < 0) {
                goto fail;
            }
        }
        int rc = set_inferred_capacity(ext, PyTuple_GET_ITEM(ctx, BX_KNOWN));
        if (rc < 0) {
            goto fail;
        }
        if (rc == 0) {
            goto decline;
        }
    }
    else {
        ext = Py_NewRef(Py_None);
    }
    Py_DECREF(entries);
    out[0] = code_obj;
    out[1] = language;
    out[2] = PyLong_FromLong(version);
    out[3] = PyLong_FromLong(opaque);
    out[4] = PyLong_FromLong(flag);
    out[5] = remark;
    out[6] = ext;
    out[7] = fast_header;
    if (out[2] == NULL || out[3] == NULL || out[4] == NULL) {
        for (int i = 0; i < 8; i++) {
            Py_CLEAR(out[i]);
        }
        return -1;
    }
    return 1;
decline:
fail:
    Py_XDECREF(remark);
    Py_XDECREF(entries);
    Py_XDECREF(fast_header);
    Py_XDECREF(code_obj);
    Py_XDECREF(language);
    Py_XDECREF(ext);
    return PyErr_Occurred() ? -1 : 0;
}

/* decode_binary_fields(data: bytes, ctx) -> HeaderFields (header_binary.decode_binary_header), or None. */
static PyObject *
sp_decode_binary_fields(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2 || !PyBytes_CheckExact(args[0]) || !PyTuple_Check(args[1]) || PyTuple_GET_SIZE(args[1]) != BX_SIZE) {
        return DECLINE();
    }
    PyObject *out[8] = {NULL};
    int rc = decode_binary_region((const unsigned char *)PyBytes_AS_STRING(args[0]), PyBytes_GET_SIZE(args[0]),
                                  args[1], out);
    if (rc <= 0) {
        return rc == 0 ? DECLINE() : NULL;
    }
    return new_header_fields(PyTuple_GET_ITEM(args[1], BX_HEADER_FIELDS), out);
}

/* ---------------------------------------------------------------------------------------------------- */
/* the JSON header, read in the layout Java writes */

typedef struct {
    const unsigned char *p;
    const unsigned char *end;
} Cur;

static int
expect(Cur *c, const char *lit, Py_ssize_t n)
{
    if (c->end - c->p < n || memcmp(c->p, lit, (size_t)n) != 0) {
        return 0;
    }
    c->p += n;
    return 1;
}

#define EXPECT(c, lit) expect((c), (lit), (Py_ssize_t)(sizeof(lit) - 1))

/* A JSON integer within the 32-bit range (what the reference accepts without complaint); 0 to decline. */
static int
parse_int32(Cur *c, long long *out)
{
    const unsigned char *p = c->p;
    int negative = 0;
    if (p < c->end && *p == '-') {
        negative = 1;
        p++;
    }
    if (p >= c->end || *p < '0' || *p > '9') {
        return 0;
    }
    long long v = 0;
    if (*p == '0') {
        p++; /* JSON allows no leading zero: a digit after it is refused by the caller's next expect() */
    }
    else {
        int digits = 0;
        while (p < c->end && *p >= '0' && *p <= '9') {
            if (++digits > 10) {
                return 0;
            }
            v = v * 10 + (*p - '0');
            p++;
        }
    }
    if (negative) {
        v = -v;
    }
    if (v < INT32_MIN_ || v > INT32_MAX_) {
        return 0;
    }
    c->p = p;
    *out = v;
    return 1;
}

static int
hex4(const unsigned char *p, Py_UCS4 *out)
{
    Py_UCS4 v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char h = p[i];
        v <<= 4;
        if (h >= '0' && h <= '9') {
            v |= (Py_UCS4)(h - '0');
        }
        else if (h >= 'a' && h <= 'f') {
            v |= (Py_UCS4)(h - 'a' + 10);
        }
        else if (h >= 'A' && h <= 'F') {
            v |= (Py_UCS4)(h - 'A' + 10);
        }
        else {
            return 0;
        }
    }
    *out = v;
    return 1;
}

/*
 * One UTF-8 sequence at p (before end) as json.loads reads bytes: strict UTF-8 except that encoded
 * surrogates pass (it decodes with "surrogatepass"). Returns its length, 0 if invalid.
 */
static int
utf8_char(const unsigned char *p, const unsigned char *end, Py_UCS4 *out)
{
    unsigned char b0 = p[0];
    Py_ssize_t avail = end - p;
#define CONT(i) (avail > (i) && (p[i] & 0xC0) == 0x80)
    if (b0 < 0x80) {
        *out = b0;
        return 1;
    }
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        if (!CONT(1)) {
            return 0;
        }
        *out = ((Py_UCS4)(b0 & 0x1F) << 6) | (p[1] & 0x3F);
        return 2;
    }
    if (b0 >= 0xE0 && b0 <= 0xEF) {
        if (!CONT(1) || !CONT(2) || (b0 == 0xE0 && p[1] < 0xA0)) {
            return 0;
        }
        *out = ((Py_UCS4)(b0 & 0x0F) << 12) | ((Py_UCS4)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
        return 3;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
        if (!CONT(1) || !CONT(2) || !CONT(3) || (b0 == 0xF0 && p[1] < 0x90) || (b0 == 0xF4 && p[1] > 0x8F)) {
            return 0;
        }
        *out = ((Py_UCS4)(b0 & 0x07) << 18) | ((Py_UCS4)(p[1] & 0x3F) << 12) | ((Py_UCS4)(p[2] & 0x3F) << 6) |
               (p[3] & 0x3F);
        return 4;
    }
    return 0;
#undef CONT
}

/* A string with escapes in [p, end) (the quotes excluded), decoded as json.loads does; NULL to decline. */
static PyObject *
unescape(const unsigned char *p, const unsigned char *end)
{
    Py_ssize_t cap = end - p;
    Py_UCS4 stack[256];
    Py_UCS4 *out = cap <= 256 ? stack : PyMem_Malloc((size_t)cap * sizeof *out);
    if (out == NULL) {
        return PyErr_NoMemory();
    }
    Py_ssize_t n = 0;
    PyObject *result = NULL;
    while (p < end) {
        Py_UCS4 c;
        if (*p == '\\') {
            if (end - p < 2) {
                goto done;
            }
            unsigned char e = p[1];
            p += 2;
            switch (e) {
            case '"': c = '"'; break;
            case '\\': c = '\\'; break;
            case '/': c = '/'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'u':
                if (end - p < 4 || !hex4(p, &c)) {
                    goto done;
                }
                p += 4;
                if (c >= 0xD800 && c <= 0xDBFF && end - p >= 2 && p[0] == '\\' && p[1] == 'u') {
                    Py_UCS4 low;
                    if (end - p < 6 || !hex4(p + 2, &low)) {
                        goto done; /* json.loads refuses a broken second escape */
                    }
                    if (low >= 0xDC00 && low <= 0xDFFF) {
                        c = 0x10000 + (((c - 0xD800) << 10) | (low - 0xDC00));
                        p += 6;
                    }
                }
                break;
            default:
                goto done;
            }
        }
        else {
            int len = utf8_char(p, end, &c);
            if (len == 0) {
                goto done;
            }
            p += len;
        }
        out[n++] = c;
    }
    result = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out, n);
done:
    if (out != stack) {
        PyMem_Free(out);
    }
    return result;
}

/* A JSON string at the cursor; NULL with no exception set to decline. */
static PyObject *
parse_str(Cur *c)
{
    const unsigned char *p = c->p;
    if (p >= c->end || *p != '"') {
        return NULL;
    }
    const unsigned char *start = ++p;
    int escapes = 0, high = 0;
    while (p < c->end && *p != '"') {
        unsigned char ch = *p;
        if (ch == '\\') {
            if (c->end - p < 2) {
                return NULL;
            }
            escapes = 1;
            p += 2;
            continue;
        }
        if (ch < 0x20) {
            return NULL; /* json.loads refuses raw control characters */
        }
        high |= ch >= 0x80;
        p++;
    }
    if (p >= c->end) {
        return NULL;
    }
    Py_ssize_t n = p - start;
    c->p = p + 1;
    PyObject *s;
    if (escapes) {
        s = unescape(start, p);
    }
    else if (high) {
        s = PyUnicode_DecodeUTF8((const char *)start, n, "surrogatepass");
        if (s == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear();
        }
    }
    else if (n == 1) {
        s = PyUnicode_FromOrdinal(start[0]);
    }
    else {
        s = PyUnicode_New(n, 127);
        if (s != NULL) {
            memcpy(PyUnicode_1BYTE_DATA(s), start, (size_t)n);
        }
    }
    return s;
}

/* JSON decode context, built once by header_json._decode_context(). */
enum { JX_HEADER_FIELDS, JX_EXT_FIELDS, JX_LANGUAGES /* dict: name -> LanguageCode */, JX_KNOWN, JX_SIZE };

/*
 * header_json.decode_json_header of the size bytes at data, into out[8] (HeaderFields' order, new
 * references). 1 done, 0 decline (with no exception pending), -1 error.
 *
 * Only the exact text a Java peer writes is read here: ``{"code":N,"extFields":{...},"flag":N,
 * "language":"..","opaque":N,"remark":"..","serializeTypeCurrentRPC":"..","version":N}`` without
 * whitespace, extFields and remark optional, every ext value a string, numbers within 32 bits, a known
 * language name. Anything else (C++ headers, bare numbers, whitespace, a malformed document) is declined
 * and read by json.loads.
 */
static int
decode_json_region(const unsigned char *data, Py_ssize_t size, PyObject *ctx, PyObject **out)
{
    if (!PyTuple_Check(ctx) || PyTuple_GET_SIZE(ctx) != JX_SIZE || !PyDict_Check(PyTuple_GET_ITEM(ctx, JX_LANGUAGES))) {
        return 0;
    }
    Cur c;
    c.p = data;
    c.end = data + size;
    long long code, flag, opaque, version;
    PyObject *ext = NULL, *name = NULL, *language = NULL, *remark = NULL, *key = NULL, *value = NULL;
    if (!EXPECT(&c, "{\"code\":") || !parse_int32(&c, &code)) {
        goto decline;
    }
    if (EXPECT(&c, ",\"extFields\":{")) {
        ext = new_ext_fields(PyTuple_GET_ITEM(ctx, JX_EXT_FIELDS));
        if (ext == NULL) {
            goto decline;
        }
        if (!EXPECT(&c, "}")) {
            for (;;) {
                key = parse_str(&c);
                if (key == NULL || !EXPECT(&c, ":")) {
                    goto decline;
                }
                value = parse_str(&c);
                if (value == NULL || PyDict_SetItem(ext, key, value) < 0) {
                    goto decline;
                }
                Py_CLEAR(key);
                Py_CLEAR(value);
                if (EXPECT(&c, "}")) {
                    break;
                }
                if (!EXPECT(&c, ",")) {
                    goto decline;
                }
            }
        }
    }
    if (!EXPECT(&c, ",\"flag\":") || !parse_int32(&c, &flag) || !EXPECT(&c, ",\"language\":")) {
        goto decline;
    }
    name = parse_str(&c);
    if (name == NULL || !EXPECT(&c, ",\"opaque\":") || !parse_int32(&c, &opaque)) {
        goto decline;
    }
    if (EXPECT(&c, ",\"remark\":")) {
        remark = parse_str(&c);
        if (remark == NULL) {
            goto decline;
        }
    }
    if (!EXPECT(&c, ",\"serializeTypeCurrentRPC\":")) {
        goto decline;
    }
    value = parse_str(&c);
    if (value == NULL) {
        goto decline;
    }
    Py_CLEAR(value);
    if (!EXPECT(&c, ",\"version\":") || !parse_int32(&c, &version) || !EXPECT(&c, "}") || c.p != c.end) {
        goto decline;
    }
    language = PyDict_GetItemWithError(PyTuple_GET_ITEM(ctx, JX_LANGUAGES), name);
    if (language == NULL) {
        goto decline; /* an unknown name: the reference words the error */
    }
    Py_INCREF(language);
    Py_CLEAR(name);
    if (ext != NULL) {
        int rc = set_inferred_capacity(ext, PyTuple_GET_ITEM(ctx, JX_KNOWN));
        if (rc <= 0) {
            goto decline;
        }
    }
    out[0] = PyLong_FromLongLong(code);
    out[1] = language;
    out[2] = PyLong_FromLongLong(version);
    out[3] = PyLong_FromLongLong(opaque);
    out[4] = PyLong_FromLongLong(flag);
    out[5] = remark != NULL ? remark : Py_NewRef(Py_None);
    out[6] = ext != NULL ? ext : Py_NewRef(Py_None);
    out[7] = Py_NewRef(Py_None);
    if (out[0] == NULL || out[2] == NULL || out[3] == NULL || out[4] == NULL) {
        for (int i = 0; i < 8; i++) {
            Py_CLEAR(out[i]);
        }
        return -1;
    }
    return 1;
decline:
    Py_XDECREF(ext);
    Py_XDECREF(name);
    Py_XDECREF(language);
    Py_XDECREF(remark);
    Py_XDECREF(key);
    Py_XDECREF(value);
    return PyErr_Occurred() ? -1 : 0;
}

/* decode_json_fields(data: bytes, ctx) -> HeaderFields (header_json.decode_json_header), or None. */
static PyObject *
sp_decode_json_fields(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2 || !PyBytes_CheckExact(args[0]) || !PyTuple_Check(args[1]) || PyTuple_GET_SIZE(args[1]) != JX_SIZE) {
        return DECLINE();
    }
    PyObject *out[8] = {NULL};
    int rc = decode_json_region((const unsigned char *)PyBytes_AS_STRING(args[0]), PyBytes_GET_SIZE(args[0]),
                                args[1], out);
    if (rc <= 0) {
        return rc == 0 ? DECLINE() : NULL;
    }
    return new_header_fields(PyTuple_GET_ITEM(args[1], JX_HEADER_FIELDS), out);
}

/* Command decode context, built once by command._decode_context(). */
enum { CX_JSON, CX_BINARY, CX_SERIALIZE_JSON, CX_SERIALIZE_ROCKETMQ, CX_SIZE };

static uint32_t
rd32u(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/*
 * decode_command(cls, frame: bytes, ctx) -> cls instance (RemotingCommand.decode), or None to decline:
 * the same checks and messages on the length prefix, the header decoded in place, the attributes set in
 * the reference's order on an instance made by cls.__new__.
 */
static PyObject *
sp_decode_command(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3 || !PyType_Check(args[0]) || !PyBytes_CheckExact(args[1]) || !PyTuple_Check(args[2]) ||
        PyTuple_GET_SIZE(args[2]) != CX_SIZE) {
        return DECLINE();
    }
    PyTypeObject *cls = (PyTypeObject *)args[0];
    PyObject *ctx = args[2];
    const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(args[1]);
    Py_ssize_t size = PyBytes_GET_SIZE(args[1]);
    if (size < 8) {
        return PyErr_Format(WireError, "frame of %zd bytes is shorter than the 8-byte minimum", size);
    }
    uint32_t length = rd32u(d);
    uint32_t header_word = rd32u(d + 4);
    if ((long long)length != (long long)size - 4) {
        return PyErr_Format(WireError, "length prefix says %lu bytes follow, but the frame holds %zd",
                            (unsigned long)length, size - 4);
    }
    Py_ssize_t header_end = 8 + (Py_ssize_t)(header_word & 0xFFFFFF);
    if (header_end > size) {
        return PyErr_Format(WireError, "header length %zd runs past the frame of %zd bytes", header_end - 8, size);
    }
    uint32_t type_byte = header_word >> 24;
    PyObject *out[8] = {NULL};
    PyObject *serialize;
    int rc;
    if (type_byte == 0) {
        rc = decode_json_region(d + 8, header_end - 8, PyTuple_GET_ITEM(ctx, CX_JSON), out);
        serialize = PyTuple_GET_ITEM(ctx, CX_SERIALIZE_JSON);
    }
    else if (type_byte == 1) {
        rc = decode_binary_region(d + 8, header_end - 8, PyTuple_GET_ITEM(ctx, CX_BINARY), out);
        serialize = PyTuple_GET_ITEM(ctx, CX_SERIALIZE_ROCKETMQ);
    }
    else {
        return PyErr_Format(WireError, "unknown serialize type %lu in the header length word", (unsigned long)type_byte);
    }
    if (rc <= 0) {
        return rc == 0 ? DECLINE() : NULL;
    }
    PyObject *body = PyBytes_FromStringAndSize((const char *)d + header_end, size - header_end);
    PyObject *cmd = body != NULL ? cls->tp_new(cls, empty_tuple, NULL) : NULL;
    PyObject *names[10] = {a_code, a_language, a_version, a_opaque, a_flag, a_remark, a_ext_fields, a_custom_header,
                           a_body, a_serialize_type};
    PyObject *values[10] = {out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7], body, serialize};
    for (int i = 0; cmd != NULL && i < 10; i++) {
        if (PyObject_SetAttr(cmd, names[i], values[i]) < 0) {
            Py_CLEAR(cmd);
        }
    }
    for (int i = 0; i < 8; i++) {
        Py_DECREF(out[i]);
    }
    Py_XDECREF(body);
    return cmd;
}

/* ---------------------------------------------------------------------------------------------------- */
/* stored messages (rocketmq_wire/message/stored.py: encode_stored_message) */

static PyObject *zlib_crc32; /* zlib.crc32 */

enum {
    SM_TOPIC, SM_BODY, SM_FLAG, SM_PROPERTIES, SM_QUEUE_ID, SM_QUEUE_OFFSET, SM_COMMIT_LOG_OFFSET, SM_SYS_FLAG,
    SM_BORN_TIMESTAMP, SM_BORN_HOST, SM_STORE_TIMESTAMP, SM_STORE_HOST, SM_RECONSUME_TIMES, SM_PREPARED_OFFSET,
    SM_COUNT
};
static const char *const sm_names[SM_COUNT] = {
    "topic", "body", "flag", "properties_string", "queue_id", "queue_offset", "commit_log_offset", "sys_flag",
    "born_timestamp", "born_host", "store_timestamp", "store_host", "reconsume_times",
    "prepared_transaction_offset",
};
static PyObject *sm_attrs[SM_COUNT];

#define STORED_V1_MAGIC 0xDAA320A7u
#define STORED_FIXED_V4_SIZE 88
#define SYSFLAG_V6_BITS ((1LL << 4) | (1LL << 5))
#define MAX_V1_TOPIC 127
#define MAX_PROPERTIES 0x7FFF

/* "a.b.c.d:port" exactly as parse_host reads the common case: plain ASCII decimal octets without leading
 * zeros, a port up to 65535. Anything else (IPv6, brackets, spaces, other digits) returns 0: decline. */
static int
plain_ipv4_host(PyObject *s, unsigned char ip[4], long long *port)
{
    if (!PyUnicode_CheckExact(s) || str_ready(s) < 0 || !PyUnicode_IS_ASCII(s)) {
        PyErr_Clear();
        return 0;
    }
    const char *p = (const char *)PyUnicode_DATA(s);
    const char *end = p + PyUnicode_GET_LENGTH(s);
    for (int part = 0; part < 4; part++) {
        const char *start = p;
        int value = 0;
        while (p < end && *p >= '0' && *p <= '9' && p - start < 3) {
            value = value * 10 + (*p - '0');
            p++;
        }
        if (p == start || value > 255 || (p - start > 1 && *start == '0')) {
            return 0;
        }
        ip[part] = (unsigned char)value;
        if (p == end || *p != (part < 3 ? '.' : ':')) {
            return 0;
        }
        p++;
    }
    const char *digits = p;
    long long value = 0;
    while (p < end && *p >= '0' && *p <= '9' && p - digits < 5) {
        value = value * 10 + (*p - '0');
        p++;
    }
    if (p == digits || p != end || value > 0xFFFF) {
        return 0;
    }
    *port = value;
    return 1;
}

static char *
put_be64(char *p, long long v)
{
    put_be32(p, (long long)((unsigned long long)v >> 32));
    put_be32(p + 4, v);
    return p + 8;
}

/*
 * encode_stored(message) -> bytes: the V1 record encode_stored_message writes for a message whose hosts are
 * both plain IPv4, or None to decline (IPv6 or unusual hosts, a topic of more than 127 characters or
 * bytes, properties over 32767 bytes, a number outside its field, anything not of the usual type).
 */
static PyObject *
sp_encode_stored(PyObject *module, PyObject *message)
{
    (void)module;
    PyObject *v[SM_COUNT] = {NULL};
    PyObject *result = NULL;
    for (int i = 0; i < SM_COUNT; i++) {
        v[i] = PyObject_GetAttr(message, sm_attrs[i]);
        if (v[i] == NULL) {
            PyErr_Clear();
            result = DECLINE();
            goto done;
        }
    }
    long long n[SM_COUNT] = {0};
    static const int ints[] = {SM_FLAG, SM_QUEUE_ID, SM_QUEUE_OFFSET, SM_COMMIT_LOG_OFFSET, SM_SYS_FLAG,
                               SM_BORN_TIMESTAMP, SM_STORE_TIMESTAMP, SM_RECONSUME_TIMES, SM_PREPARED_OFFSET};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (!exact_ll(v[ints[i]], &n[ints[i]])) {
            result = DECLINE();
            goto done;
        }
    }
    static const int ints32[] = {SM_FLAG, SM_QUEUE_ID, SM_SYS_FLAG, SM_RECONSUME_TIMES};
    for (size_t i = 0; i < sizeof ints32 / sizeof ints32[0]; i++) {
        if (n[ints32[i]] < INT32_MIN_ || n[ints32[i]] > INT32_MAX_) {
            result = DECLINE();
            goto done;
        }
    }
    unsigned char born_ip[4], store_ip[4];
    long long born_port, store_port;
    if ((n[SM_SYS_FLAG] & SYSFLAG_V6_BITS) != 0 || !PyBytes_CheckExact(v[SM_BODY]) ||
        !PyUnicode_CheckExact(v[SM_TOPIC]) || !PyUnicode_CheckExact(v[SM_PROPERTIES]) ||
        !plain_ipv4_host(v[SM_BORN_HOST], born_ip, &born_port) ||
        !plain_ipv4_host(v[SM_STORE_HOST], store_ip, &store_port) ||
        PyUnicode_GET_LENGTH(v[SM_TOPIC]) > MAX_V1_TOPIC) {
        result = DECLINE();
        goto done;
    }
    Py_ssize_t topic_len, properties_len;
    const char *topic = PyUnicode_AsUTF8AndSize(v[SM_TOPIC], &topic_len);
    const char *properties = topic != NULL ? PyUnicode_AsUTF8AndSize(v[SM_PROPERTIES], &properties_len) : NULL;
    if (properties == NULL || topic_len > MAX_V1_TOPIC || properties_len > MAX_PROPERTIES) {
        PyErr_Clear();
        result = DECLINE();
        goto done;
    }
    Py_ssize_t body_len = PyBytes_GET_SIZE(v[SM_BODY]);
    long long total = STORED_FIXED_V4_SIZE + (long long)body_len + 1 + topic_len + 2 + properties_len;
    if (body_len > INT32_MAX_ || total > INT32_MAX_) {
        result = DECLINE();
        goto done;
    }
    PyObject *crc_obj = PyObject_CallOneArg(zlib_crc32, v[SM_BODY]);
    if (crc_obj == NULL) {
        goto done;
    }
    long long crc = 0;
    int crc_ok = exact_ll(crc_obj, &crc);
    Py_DECREF(crc_obj);
    if (!crc_ok) {
        result = DECLINE();
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (result == NULL) {
        goto done;
    }
    char *out = PyBytes_AS_STRING(result);
    put_be32(out, total);
    put_be32(out + 4, (long long)STORED_V1_MAGIC);
    put_be32(out + 8, crc & 0x7FFFFFFF);
    put_be32(out + 12, n[SM_QUEUE_ID]);
    put_be32(out + 16, n[SM_FLAG]);
    char *q = put_be64(out + 20, n[SM_QUEUE_OFFSET]);
    q = put_be64(q, n[SM_COMMIT_LOG_OFFSET]);
    put_be32(q, n[SM_SYS_FLAG]);
    q = put_be64(q + 4, n[SM_BORN_TIMESTAMP]);
    memcpy(q, born_ip, 4);
    put_be32(q + 4, born_port);
    q = put_be64(q + 8, n[SM_STORE_TIMESTAMP]);
    memcpy(q, store_ip, 4);
    put_be32(q + 4, store_port);
    put_be32(q + 8, n[SM_RECONSUME_TIMES]);
    q = put_be64(q + 12, n[SM_PREPARED_OFFSET]);
    put_be32(q, body_len);
    q += 4;
    memcpy(q, PyBytes_AS_STRING(v[SM_BODY]), (size_t)body_len);
    q += body_len;
    *q++ = (char)topic_len;
    memcpy(q, topic, (size_t)topic_len);
    q += topic_len;
    put_be16(q, properties_len);
    memcpy(q + 2, properties, (size_t)properties_len);
done:
    for (int i = 0; i < SM_COUNT; i++) {
        Py_XDECREF(v[i]);
    }
    return result;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Message-key index entries (broker/store/index_file.py, IndexFile.put_entries) */

#define INDEX_HEADER_SIZE 40
#define INDEX_SLOT_SIZE 4
#define INDEX_ENTRY_SIZE 20

static uint32_t
get_be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

/* decode_batch(cls, data): the entries of a SEND_BATCH_MESSAGE body (rocketmq_wire/message/batch.py,
 * decode_batch), each made as cls(body, properties, flag, magic, body_crc). Declines bodies the reference
 * refuses (truncated, inconsistent lengths, properties that are not UTF-8): it then raises its own error. */
static PyObject *
sp_decode_batch(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2 || !PyBytes_CheckExact(args[1])) {
        return DECLINE();
    }
    PyObject *cls = args[0];
    const unsigned char *raw = (const unsigned char *)PyBytes_AS_STRING(args[1]);
    Py_ssize_t size = PyBytes_GET_SIZE(args[1]);
    PyObject *entries = PyList_New(0);
    if (entries == NULL) {
        return NULL;
    }
    Py_ssize_t pos = 0;
    while (pos < size) {
        /* ">iiiii": total size, magic, body CRC, flag, body length; then the body, a 2-byte length and the
         * properties */
        if (size - pos < 20) {
            goto decline;
        }
        long long total = (int32_t)get_be32(raw + pos);
        long long body_length = (int32_t)get_be32(raw + pos + 16);
        if (total < 22 || total > size - pos) {
            goto decline;
        }
        Py_ssize_t end = pos + (Py_ssize_t)total;
        Py_ssize_t cursor = pos + 20;
        if (body_length < 0 || cursor + body_length + 2 > end) {
            goto decline;
        }
        Py_ssize_t properties_at = cursor + (Py_ssize_t)body_length + 2;
        Py_ssize_t properties_length = ((Py_ssize_t)raw[properties_at - 2] << 8) | raw[properties_at - 1];
        if (properties_at + properties_length != end) {
            goto decline;
        }
        PyObject *properties = PyUnicode_DecodeUTF8((const char *)raw + properties_at, properties_length, NULL);
        if (properties == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                Py_DECREF(entries);
                return NULL;
            }
            PyErr_Clear();
            goto decline;
        }
        PyObject *fields[5];
        fields[0] = PyBytes_FromStringAndSize((const char *)raw + cursor, (Py_ssize_t)body_length);
        fields[1] = properties;
        fields[2] = PyLong_FromLong((long)(int32_t)get_be32(raw + pos + 12)); /* flag */
        fields[3] = PyLong_FromLong((long)(int32_t)get_be32(raw + pos + 4));  /* magic */
        fields[4] = PyLong_FromLong((long)(int32_t)get_be32(raw + pos + 8));  /* body CRC */
        PyObject *entry = NULL;
        if (fields[0] != NULL && fields[2] != NULL && fields[3] != NULL && fields[4] != NULL) {
            entry = PyObject_Vectorcall(cls, fields, 5, NULL);
        }
        for (int i = 0; i < 5; i++) {
            Py_XDECREF(fields[i]);
        }
        if (entry == NULL || PyList_Append(entries, entry) < 0) {
            Py_XDECREF(entry);
            Py_DECREF(entries);
            return NULL;
        }
        Py_DECREF(entry);
        pos = end;
    }
    return entries;
decline:
    Py_DECREF(entries);
    return DECLINE();
}

/* index_put(map, slot_count, entries_base, room, count, begin_phy_offset, begin_timestamp, entries):
 * writes up to room (key, phy_offset, store_timestamp) entries into the mapped index file, as the
 * reference does, and returns (written, count, added_slots, begin_phy_offset, begin_timestamp,
 * end_phy_offset, end_timestamp); the header is left to the caller. Declines (before writing anything)
 * when an entry is not a (str, int, int) that fits, or when the writes would leave the buffer. */
static PyObject *
sp_index_put(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError,
                        "index_put(map, slot_count, entries_base, room, count, begin_phy, begin_ts, entries)");
        return NULL;
    }
    long long slot_count, entries_base, room, count, begin_phy, begin_ts;
    PyObject *entries = args[7];
    if (!exact_ll(args[1], &slot_count) || !exact_ll(args[2], &entries_base) || !exact_ll(args[3], &room) ||
        !exact_ll(args[4], &count) || !exact_ll(args[5], &begin_phy) || !exact_ll(args[6], &begin_ts) ||
        !PyList_CheckExact(entries) || slot_count <= 0 || count < 0 || count > INT32_MAX_ || room < 0 ||
        entries_base != INDEX_HEADER_SIZE + slot_count * INDEX_SLOT_SIZE) {
        return DECLINE();
    }
    Py_ssize_t n = PyList_GET_SIZE(entries);
    if (n > room) {
        n = (Py_ssize_t)room;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = PyList_GET_ITEM(entries, i);
        long long v;
        if (!PyTuple_CheckExact(e) || PyTuple_GET_SIZE(e) != 3 || !PyUnicode_CheckExact(PyTuple_GET_ITEM(e, 0)) ||
            str_ready(PyTuple_GET_ITEM(e, 0)) < 0 || !exact_ll(PyTuple_GET_ITEM(e, 1), &v) ||
            !exact_ll(PyTuple_GET_ITEM(e, 2), &v)) {
            PyErr_Clear();
            return DECLINE();
        }
    }
    if (count + n > INT32_MAX_) {
        return DECLINE();
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE) < 0) {
        PyErr_Clear();
        return DECLINE();
    }
    if (view.len < entries_base + (count + n) * INDEX_ENTRY_SIZE) {
        PyBuffer_Release(&view);
        return DECLINE();
    }
    unsigned char *map = view.buf;
    long long added_slots = 0, end_phy = 0, end_ts = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = PyList_GET_ITEM(entries, i);
        long long phy, ts;
        exact_ll(PyTuple_GET_ITEM(e, 1), &phy);
        exact_ll(PyTuple_GET_ITEM(e, 2), &ts);
        uint32_t h = java_hash(PyTuple_GET_ITEM(e, 0));
        long long key_hash = h >= 0x80000000u ? 0x100000000LL - (long long)h : (long long)h;
        if (key_hash > INT32_MAX_) {
            key_hash = 0;
        }
        long long slot_position = INDEX_HEADER_SIZE + (key_hash % slot_count) * INDEX_SLOT_SIZE;
        long long head = (int32_t)get_be32(map + slot_position);
        if (head <= 0 || head > count) {
            head = 0;
        }
        if (count <= 1) {
            begin_phy = phy;
            begin_ts = ts;
        }
        long long time_diff = 0;
        if (begin_ts > 0) {
            /* ts - begin_ts cannot overflow: both are Java longs and the reference clamps the result */
            long long diff = (ts >= 0 || begin_ts <= LLONG_MAX + ts) ? ts - begin_ts : LLONG_MIN;
            time_diff = diff <= 0 ? 0 : diff / 1000;
            if (time_diff > INT32_MAX_) {
                time_diff = INT32_MAX_;
            }
        }
        unsigned char *entry = map + entries_base + count * INDEX_ENTRY_SIZE;
        put_be32((char *)entry, key_hash);
        put_be64((char *)entry + 4, phy);
        put_be32((char *)entry + 12, time_diff);
        put_be32((char *)entry + 16, head);
        put_be32((char *)map + slot_position, count);
        if (head == 0) {
            added_slots++;
        }
        count++;
        end_phy = phy;
        end_ts = ts;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(nLLLLLL)", n, count, added_slots, begin_phy, begin_ts, end_phy, end_ts);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Message properties (rocketmq_wire/message/properties.py) */

#define NAME_VALUE_SEP 1 /* \x01 */
#define PROPERTY_SEP 2   /* \x02 */

static int
has_char(PyObject *s, Py_UCS4 ch)
{
    return PyUnicode_FindChar(s, ch, 0, PyUnicode_GET_LENGTH(s), 1) != -1;
}

/* The next (name, value) of a dict (pos) or a list of 2-tuples (index); 0 at the end, -1 to decline. */
static int
next_pair(PyObject *src, Py_ssize_t *pos, PyObject **name, PyObject **value)
{
    if (PyDict_CheckExact(src)) {
        return PyDict_Next(src, pos, name, value) ? 1 : 0;
    }
    if (*pos >= PyList_GET_SIZE(src)) {
        return 0;
    }
    PyObject *item = PyList_GET_ITEM(src, *pos);
    (*pos)++;
    if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2) {
        return -1;
    }
    *name = PyTuple_GET_ITEM(item, 0);
    *value = PyTuple_GET_ITEM(item, 1);
    return 1;
}

/* encode_properties(pairs, v5): pairs is a dict or a list of 2-tuples of str (None values left out).
 * Declines whatever the reference would refuse or that is not plain str, so its errors stay its own. */
static PyObject *
sp_encode_properties(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "encode_properties(pairs, v5)");
        return NULL;
    }
    PyObject *src = args[0];
    int v5 = PyObject_IsTrue(args[1]);
    if (v5 < 0) {
        return NULL;
    }
    if (!PyDict_CheckExact(src) && !PyList_CheckExact(src)) {
        return DECLINE();
    }
    Py_ssize_t pos = 0, length = 0, pairs = 0;
    Py_UCS4 max_char = 127;
    PyObject *name, *value;
    int more;
    while ((more = next_pair(src, &pos, &name, &value)) == 1) {
        if (value == Py_None) {
            continue;
        }
        if (!PyUnicode_CheckExact(name) || !PyUnicode_CheckExact(value) || str_ready(name) < 0 ||
            str_ready(value) < 0) {
            PyErr_Clear();
            return DECLINE();
        }
        if (PyUnicode_GET_LENGTH(name) == 0 || has_char(name, NAME_VALUE_SEP) || has_char(name, PROPERTY_SEP) ||
            has_char(value, PROPERTY_SEP)) {
            return DECLINE();
        }
        Py_UCS4 m = PyUnicode_MAX_CHAR_VALUE(name);
        if (m > max_char) {
            max_char = m;
        }
        m = PyUnicode_MAX_CHAR_VALUE(value);
        if (m > max_char) {
            max_char = m;
        }
        length += PyUnicode_GET_LENGTH(name) + 1 + PyUnicode_GET_LENGTH(value) + 1;
        pairs++;
    }
    if (more < 0) {
        return DECLINE();
    }
    if (pairs == 0) {
        return PyUnicode_New(0, 127);
    }
    if (!v5) {
        length--; /* no separator after the last pair */
    }
    PyObject *out = PyUnicode_New(length, max_char);
    if (out == NULL) {
        return NULL;
    }
    Py_ssize_t at = 0;
    pos = 0;
    while (next_pair(src, &pos, &name, &value) == 1) {
        if (value == Py_None) {
            continue;
        }
        Py_ssize_t n = PyUnicode_GET_LENGTH(name);
        if (PyUnicode_CopyCharacters(out, at, name, 0, n) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        at += n;
        PyUnicode_WRITE(PyUnicode_KIND(out), PyUnicode_DATA(out), at++, NAME_VALUE_SEP);
        n = PyUnicode_GET_LENGTH(value);
        if (PyUnicode_CopyCharacters(out, at, value, 0, n) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        at += n;
        if (at < length) {
            PyUnicode_WRITE(PyUnicode_KIND(out), PyUnicode_DATA(out), at++, PROPERTY_SEP);
        }
    }
    return out;
}

/* decode_properties(text): name -> value for the usual string, every pair a non-empty name, \x01 and a
 * non-empty value, one optional trailing \x02; declines anything else (the reference skips bad pairs). */
static PyObject *
sp_decode_properties(PyObject *module, PyObject *text)
{
    (void)module;
    if (!PyUnicode_CheckExact(text) || str_ready(text) < 0) {
        PyErr_Clear();
        return DECLINE();
    }
    Py_ssize_t end = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    PyObject *result = PyDict_New();
    if (result == NULL) {
        return NULL;
    }
    Py_ssize_t start = 0;
    while (start < end) {
        Py_ssize_t sep = -1, stop = start;
        while (stop < end) {
            Py_UCS4 ch = PyUnicode_READ(kind, data, stop);
            if (ch == PROPERTY_SEP) {
                break;
            }
            if (ch == NAME_VALUE_SEP && sep < 0) {
                sep = stop;
            }
            stop++;
        }
        if (sep <= start || sep + 1 >= stop) { /* no \x01, an empty name or an empty value */
            Py_DECREF(result);
            return DECLINE();
        }
        PyObject *name = PyUnicode_Substring(text, start, sep);
        PyObject *value = name != NULL ? PyUnicode_Substring(text, sep + 1, stop) : NULL;
        int failed = value == NULL || PyDict_SetItem(result, name, value) < 0;
        Py_XDECREF(name);
        Py_XDECREF(value);
        if (failed) {
            Py_DECREF(result);
            return NULL;
        }
        start = stop + 1;
    }
    return result;
}

/* ---------------------------------------------------------------------------------------------------- */
/* FileMap(fd, size): a shared writable mapping of a file, written with write(offset, data).
 *
 * Python's mmap keeps a duplicate of the file's descriptor for as long as the map lives; a broker maps a
 * file per consume queue, thousands, so that would double what its files take of the descriptor limit.
 * This map keeps no descriptor (the caller owns the file's) and exports no buffer, so close() always
 * unmaps. Writes are bounds-checked and refused once closed: a stray write can raise, never fault. */

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#define HAVE_FILE_MAP 1

typedef struct {
    PyObject_HEAD
    char *addr;
    Py_ssize_t size;
} FileMapObject;

static PyObject *
filemap_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    int fd;
    Py_ssize_t size;
    static char *kwlist[] = {"fd", "size", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "in:FileMap", kwlist, &fd, &size)) {
        return NULL;
    }
    if (size <= 0) {
        return PyErr_Format(PyExc_ValueError, "a file map needs a positive size, not %zd", size);
    }
    FileMapObject *self = (FileMapObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    void *addr = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (addr == MAP_FAILED) {
        Py_DECREF(self);
        return PyErr_SetFromErrno(PyExc_OSError);
    }
#ifdef MADV_RANDOM
    /* No readahead on faults: a write fault would otherwise bring its neighbours in as one large folio, and
     * every fsync after it writes the whole folio back (measured: 0.7 ms an fdatasync instead of 0.2 once
     * a file is past its first few tens of MiB). Only a hint: a kernel that refuses it costs speed, not
     * correctness. */
    (void)madvise(addr, (size_t)size, MADV_RANDOM);
#endif
    self->addr = (char *)addr;
    self->size = size;
    return (PyObject *)self;
}

static void
filemap_unmap(FileMapObject *self)
{
    if (self->addr != NULL) {
        munmap(self->addr, (size_t)self->size);
        self->addr = NULL;
    }
}

static void
filemap_dealloc(FileMapObject *self)
{
    filemap_unmap(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
filemap_write(FileMapObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        return PyErr_Format(PyExc_TypeError, "write(offset, data) takes 2 arguments, not %zd", nargs);
    }
    Py_ssize_t offset = PyLong_AsSsize_t(args[0]);
    if (offset == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer data;
    if (PyObject_GetBuffer(args[1], &data, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (self->addr == NULL) {
        PyBuffer_Release(&data);
        return PyErr_Format(PyExc_ValueError, "write to a closed file map");
    }
    if (offset < 0 || data.len > self->size - offset) {
        PyBuffer_Release(&data);
        return PyErr_Format(PyExc_ValueError, "write of %zd bytes at %zd outside a file map of %zd bytes", data.len,
                            offset, self->size);
    }
    memcpy(self->addr + offset, data.buf, (size_t)data.len);
    PyBuffer_Release(&data);
    Py_RETURN_NONE;
}

static PyObject *
filemap_close(FileMapObject *self, PyObject *Py_UNUSED(ignored))
{
    filemap_unmap(self);
    Py_RETURN_NONE;
}

static PyObject *
filemap_closed(FileMapObject *self, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(self->addr == NULL);
}

static PyMethodDef filemap_methods[] = {
    {"write", (PyCFunction)(void (*)(void))filemap_write, METH_FASTCALL, "write(offset, data): copy data in."},
    {"close", (PyCFunction)filemap_close, METH_NOARGS, "Unmap (written pages stay in the page cache)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef filemap_getset[] = {
    {"closed", (getter)filemap_closed, NULL, "Whether close() was called.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject FileMapType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rocketmq_wire._speedups.FileMap",
    .tp_basicsize = sizeof(FileMapObject),
    .tp_dealloc = (destructor)filemap_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "FileMap(fd, size): a shared writable map of a file that holds no descriptor of its own.",
    .tp_methods = filemap_methods,
    .tp_getset = filemap_getset,
    .tp_new = filemap_new,
};
#endif

/* ---------------------------------------------------------------------------------------------------- */

#define FASTCALL(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL

static PyMethodDef methods[] = {
    {"java_string_hash", sp_java_string_hash, METH_O, "String.hashCode() as an unsigned 32-bit int."},
    {"items_java_order", FASTCALL(sp_items_java_order), "items_java_order(d, capacity): d's items in HashMap order."},
    {"infer_capacity", FASTCALL(sp_infer_capacity),
     "infer_capacity(keys, known): the first known capacity explaining the key order, else None."},
    {"encode_entries", sp_encode_entries, METH_O, "encode_entries(entries): binary ext entries."},
    {"decode_entries", FASTCALL(sp_decode_entries), "decode_entries(data, start, end): binary ext entries."},
    {"encode_binary_header", FASTCALL(sp_encode_binary_header),
     "encode_binary_header(code, language, version, opaque, flag, remark, entries): header bytes."},
    {"encode_json_header", FASTCALL(sp_encode_json_header),
     "encode_json_header(code, language, version, opaque, flag, remark, ext, java_order, capacity)."},
    {"encode_header", FASTCALL(sp_encode_header),
     "encode_header(serialize, code, language, version, opaque, flag, remark, header, plan, fast, ext)."},
    {"decode_binary_fields", FASTCALL(sp_decode_binary_fields), "decode_binary_fields(data, ctx): HeaderFields."},
    {"decode_json_fields", FASTCALL(sp_decode_json_fields), "decode_json_fields(data, ctx): HeaderFields."},
    {"encode_command", sp_encode_command, METH_O, "encode_command(cmd): the whole frame of a RemotingCommand."},
    {"decode_command", FASTCALL(sp_decode_command), "decode_command(cls, frame, ctx): a RemotingCommand."},
    {"render", FASTCALL(sp_render), "render(header, plan): the header's entries as Java's toString() writes them."},
    {"from_ext", FASTCALL(sp_from_ext), "from_ext(cls, fields, ext, parse_value): a typed header from ext entries."},
    {"encode_stored", sp_encode_stored, METH_O, "encode_stored(message): a stored message's V1 record."},
    {"encode_properties", FASTCALL(sp_encode_properties),
     "encode_properties(pairs, v5): the properties string of a dict or a list of (name, value)."},
    {"decode_properties", sp_decode_properties, METH_O, "decode_properties(text): name -> value."},
    {"decode_batch", FASTCALL(sp_decode_batch), "decode_batch(cls, data): a batch body's entries."},
    {"index_put", FASTCALL(sp_index_put),
     "index_put(map, slot_count, entries_base, room, count, begin_phy, begin_ts, entries): index entries."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "rocketmq_wire._speedups",
    "C versions of the codec's hot paths; use them through rocketmq_wire.accel.",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) {
        return NULL;
    }
    WireError = PyErr_NewExceptionWithDoc("rocketmq_wire._speedups.WireError",
                                          "Malformed input; rocketmq_wire turns it into CodecError.",
                                          PyExc_ValueError, NULL);
    s_true = PyUnicode_InternFromString("true");
    s_false = PyUnicode_InternFromString("false");
    s_check = PyUnicode_InternFromString("check");
    s_capacity = PyUnicode_InternFromString("capacity");
    s_name = PyUnicode_InternFromString("_name_");
    empty_tuple = PyTuple_New(0);
    a_code = PyUnicode_InternFromString("code");
    a_language = PyUnicode_InternFromString("language");
    a_version = PyUnicode_InternFromString("version");
    a_opaque = PyUnicode_InternFromString("opaque");
    a_flag = PyUnicode_InternFromString("flag");
    a_remark = PyUnicode_InternFromString("remark");
    a_ext_fields = PyUnicode_InternFromString("ext_fields");
    a_custom_header = PyUnicode_InternFromString("custom_header");
    a_body = PyUnicode_InternFromString("body");
    a_serialize_type = PyUnicode_InternFromString("serialize_type");
    a_plans_cache = PyUnicode_InternFromString("_plans_for_c_cache");
    a_plans = PyUnicode_InternFromString("_plans_for_c");
    for (int i = 0; i < SM_COUNT; i++) {
        sm_attrs[i] = PyUnicode_InternFromString(sm_names[i]);
        if (sm_attrs[i] == NULL) {
            Py_DECREF(m);
            return NULL;
        }
    }
    PyObject *zlib = PyImport_ImportModule("zlib");
    zlib_crc32 = zlib != NULL ? PyObject_GetAttrString(zlib, "crc32") : NULL;
    Py_XDECREF(zlib);
    if (WireError == NULL || zlib_crc32 == NULL || s_true == NULL || s_false == NULL || s_check == NULL || s_capacity == NULL ||
        s_name == NULL || empty_tuple == NULL || a_code == NULL || a_language == NULL || a_version == NULL ||
        a_opaque == NULL || a_flag == NULL || a_remark == NULL || a_ext_fields == NULL || a_custom_header == NULL ||
        a_body == NULL || a_serialize_type == NULL || a_plans_cache == NULL || a_plans == NULL ||
        PyModule_AddObjectRef(m, "WireError", WireError) < 0) {
        Py_DECREF(m);
        return NULL;
    }
#ifdef HAVE_FILE_MAP
    if (PyType_Ready(&FileMapType) < 0 || PyModule_AddObjectRef(m, "FileMap", (PyObject *)&FileMapType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
#endif
    return m;
}
