#ifndef HERALD_CRDKAFKA_SHIM_H
#define HERALD_CRDKAFKA_SHIM_H

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

/* rd_kafka_producev is variadic, which Swift cannot call. This wrapper takes the fields Herald uses.
 * The key and payload are copied (RD_KAFKA_MSG_F_COPY), a NULL payload is a tombstone. On success librdkafka
 * takes ownership of `headers` (which may be NULL); on failure the caller still owns them.
 * Returns the error code directly, so nobody has to read the thread-local rd_kafka_last_error(). */
static inline rd_kafka_resp_err_t herald_produce(rd_kafka_t *rk,
                                                 const char *topic,
                                                 int32_t partition,
                                                 const void *key, size_t key_len,
                                                 const void *payload, size_t payload_len,
                                                 rd_kafka_headers_t *headers,
                                                 void *opaque) {
    if (headers != NULL) {
        return rd_kafka_producev(rk,
                                 RD_KAFKA_V_TOPIC(topic),
                                 RD_KAFKA_V_PARTITION(partition),
                                 RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                 RD_KAFKA_V_KEY(key, key_len),
                                 RD_KAFKA_V_VALUE((void *)payload, payload_len),
                                 RD_KAFKA_V_HEADERS(headers),
                                 RD_KAFKA_V_OPAQUE(opaque),
                                 RD_KAFKA_V_END);
    }
    return rd_kafka_producev(rk,
                             RD_KAFKA_V_TOPIC(topic),
                             RD_KAFKA_V_PARTITION(partition),
                             RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                             RD_KAFKA_V_KEY(key, key_len),
                             RD_KAFKA_V_VALUE((void *)payload, payload_len),
                             RD_KAFKA_V_OPAQUE(opaque),
                             RD_KAFKA_V_END);
}

/* The partition-unassigned sentinel and offset sentinels are macros Swift imports, but keep them in one place. */
static const int32_t HERALD_PARTITION_UA = RD_KAFKA_PARTITION_UA;
static const int64_t HERALD_OFFSET_BEGINNING = RD_KAFKA_OFFSET_BEGINNING;
static const int64_t HERALD_OFFSET_END = RD_KAFKA_OFFSET_END;
static const int64_t HERALD_OFFSET_STORED = RD_KAFKA_OFFSET_STORED;
static const int64_t HERALD_OFFSET_INVALID = RD_KAFKA_OFFSET_INVALID;

#endif
