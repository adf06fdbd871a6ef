/* Symbols that Debian sid's arm64 Swift runtime (built against glibc 2.43) references and Debian 12's glibc 2.36
 * lacks: the C23 entry points glibc 2.38 added for strtol and sscanf (they differ from the classic ones only in
 * accepting "0b" binary prefixes, which nothing in the Swift runtime parses), and strlcpy and strlcat (glibc 2.38;
 * CoreFoundation calls strlcat).
 * Linked into the arm64 binaries by `scripts/package --arch arm64` so that they run on Debian 12 and Raspberry Pi OS
 * bookworm (docs/packaging.md, "The glibc floor"). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long __isoc23_strtol(const char *s, char **end, int base) { return strtol(s, end, base); }
long long __isoc23_strtoll(const char *s, char **end, int base) { return strtoll(s, end, base); }
unsigned long __isoc23_strtoul(const char *s, char **end, int base) { return strtoul(s, end, base); }
unsigned long long __isoc23_strtoull(const char *s, char **end, int base) { return strtoull(s, end, base); }

int __isoc23_sscanf(const char *s, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    int result = vsscanf(s, format, arguments);
    va_end(arguments);
    return result;
}

/* BSD semantics: copies at most size - 1 bytes, always terminates when size > 0, returns strlen(source). */
size_t strlcpy(char *destination, const char *source, size_t size) {
    size_t length = strlen(source);
    if (size > 0) {
        size_t count = length < size - 1 ? length : size - 1;
        memcpy(destination, source, count);
        destination[count] = '\0';
    }
    return length;
}

/* BSD semantics: appends to a string of at most size - 1 bytes, returns the length it tried to make. */
size_t strlcat(char *destination, const char *source, size_t size) {
    size_t used = strnlen(destination, size);
    if (used == size) return size + strlen(source);
    return used + strlcpy(destination + used, source, size - used);
}
