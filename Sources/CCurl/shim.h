#ifndef HERALD_CCURL_SHIM_H
#define HERALD_CCURL_SHIM_H

#include <curl/curl.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

/* curl_easy_setopt, curl_multi_setopt and curl_easy_getinfo are variadic, which Swift cannot call.
 * One typed wrapper per argument kind. */
static inline CURLcode herald_curl_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_curl_easy_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_curl_easy_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_curl_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_curl_easy_setopt_write(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, cb);
}
static inline CURLcode herald_curl_easy_setopt_header(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, cb);
}
static inline CURLcode herald_curl_easy_setopt_read(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_READFUNCTION, cb);
}
static inline CURLMcode herald_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLcode herald_curl_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode herald_curl_easy_getinfo_double(CURL *h, CURLINFO i, double *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode herald_curl_easy_getinfo_string(CURL *h, CURLINFO i, char **v) { return curl_easy_getinfo(h, i, v); }

/* The address guard of calls to customers' endpoints (webhooks): a connection to a private, loopback, link-local or
 * otherwise non-public address is refused before it is opened (CURLOPT_OPENSOCKETFUNCTION: after DNS resolution, on
 * the first connection and on every redirect's), and a request over a reused connection is checked again before it is
 * sent (CURLOPT_PREREQFUNCTION). What was refused is kept for the error. */
typedef struct herald_address_guard {
    int refused;
    char address[INET6_ADDRSTRLEN];
} herald_address_guard;

/* Whether an IPv4 address (network order bytes) is one a public endpoint cannot have. */
static inline int herald_ipv4_is_private(const unsigned char *a) {
    if (a[0] == 0 || a[0] == 10 || a[0] == 127) return 1;                 /* this network, private, loopback */
    if (a[0] == 100 && (a[1] & 0xC0) == 64) return 1;                    /* 100.64/10 shared (carrier NAT) */
    if (a[0] == 169 && a[1] == 254) return 1;                            /* link-local (cloud metadata) */
    if (a[0] == 172 && (a[1] & 0xF0) == 16) return 1;                    /* 172.16/12 */
    if (a[0] == 192 && a[1] == 168) return 1;                            /* 192.168/16 */
    if (a[0] == 192 && a[1] == 0 && a[2] == 0) return 1;                 /* 192.0.0/24 protocol assignments */
    if (a[0] == 198 && (a[1] & 0xFE) == 18) return 1;                    /* 198.18/15 benchmarking */
    if (a[0] >= 224) return 1;                                           /* multicast, reserved, broadcast */
    return 0;
}

static inline int herald_ipv6_is_private(const unsigned char *a) {
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    static const unsigned char zeros[16] = {0};
    static const unsigned char nat64[12] = {0, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0};
    if (memcmp(a, mapped, 12) == 0 || memcmp(a, nat64, 12) == 0) return herald_ipv4_is_private(a + 12);
    if (memcmp(a, zeros, 15) == 0 && (a[15] == 0 || a[15] == 1)) return 1;  /* unspecified, loopback */
    if (memcmp(a, zeros, 12) == 0) return 1;                                 /* IPv4-compatible (deprecated) */
    if ((a[0] & 0xFE) == 0xFC) return 1;                                     /* fc00::/7 unique local */
    if (a[0] == 0xFE && (a[1] & 0xC0) == 0x80) return 1;                     /* fe80::/10 link-local */
    if (a[0] == 0xFE && (a[1] & 0xC0) == 0xC0) return 1;                     /* fec0::/10 site-local (deprecated) */
    if (a[0] == 0xFF) return 1;                                              /* multicast */
    if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0D && a[3] == 0xB8) return 1; /* 2001:db8::/32 documentation */
    return 0;
}

/* 1 when the text is an address Herald refuses, 0 when public, -1 when not an address. */
static inline int herald_address_text_is_private(const char *text) {
    unsigned char bytes[16];
    if (inet_pton(AF_INET, text, bytes) == 1) return herald_ipv4_is_private(bytes);
    if (inet_pton(AF_INET6, text, bytes) == 1) return herald_ipv6_is_private(bytes);
    return -1;
}

static inline curl_socket_t herald_guarded_opensocket(void *clientp, curlsocktype purpose, struct curl_sockaddr *address) {
    herald_address_guard *guard = (herald_address_guard *)clientp;
    int refused = 1;
    if (address->family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&address->addr;
        refused = herald_ipv4_is_private((const unsigned char *)&in->sin_addr);
        if (refused) inet_ntop(AF_INET, &in->sin_addr, guard->address, sizeof guard->address);
    } else if (address->family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&address->addr;
        refused = herald_ipv6_is_private((const unsigned char *)&in6->sin6_addr);
        if (refused) inet_ntop(AF_INET6, &in6->sin6_addr, guard->address, sizeof guard->address);
    } else {
        strcpy(guard->address, "a non-IP socket");
    }
    (void)purpose;
    if (refused) {
        guard->refused = 1;
        return CURL_SOCKET_BAD;
    }
    return socket(address->family, address->socktype, address->protocol);
}

static inline int herald_guarded_prereq(void *clientp, char *primary, char *local, int primary_port, int local_port) {
    herald_address_guard *guard = (herald_address_guard *)clientp;
    (void)local; (void)primary_port; (void)local_port;
    if (herald_address_text_is_private(primary) != 0) {
        guard->refused = 1;
        strncpy(guard->address, primary, sizeof guard->address - 1);
        guard->address[sizeof guard->address - 1] = 0;
        return CURL_PREREQFUNC_ABORT;
    }
    return CURL_PREREQFUNC_OK;
}

/* Turns the guard on for a handle: `guard` lives as long as the transfer. */
static inline void herald_curl_guard_addresses(CURL *h, herald_address_guard *guard) {
    curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, herald_guarded_opensocket);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, guard);
    curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, herald_guarded_prereq);
    curl_easy_setopt(h, CURLOPT_PREREQDATA, guard);
}

/* A finished transfer of curl_multi_info_read (the result sits in a union). */
static inline int herald_curl_msg_is_done(CURLMsg *m) { return m->msg == CURLMSG_DONE; }
static inline CURLcode herald_curl_msg_result(CURLMsg *m) { return m->data.result; }
static inline CURL *herald_curl_msg_handle(CURLMsg *m) { return m->easy_handle; }

/* Feature bits of the linked libcurl (the macros are not imported as constants on every toolchain). */
static inline int herald_curl_has_http2(void) {
    curl_version_info_data *d = curl_version_info(CURLVERSION_NOW);
    return (d->features & CURL_VERSION_HTTP2) != 0;
}
static inline const char *herald_curl_version(void) {
    return curl_version_info(CURLVERSION_NOW)->version;
}

#endif
