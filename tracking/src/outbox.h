/* outbox.h - the on-disk outbox of log-batch bodies that could not be sent.
 *
 * File format: a sequence of records, each
 *   "GFOB" | u32 payload length | u32 metric points | u32 CRC-32 of payload
 *   | payload (the JSON body of one runs/log-batch call, run_id included)
 * with integers little-endian. Records are appended with one write and
 * fsync'd. A record cut short at the end of the file (the writer died
 * mid-write) is a torn tail and ignored; a bad magic or CRC elsewhere is
 * corruption. */
#ifndef MLFLOW_OUTBOX_H
#define MLFLOW_OUTBOX_H

#include <stdint.h>
#include <sys/types.h>

#include "internal.h"

#define MLFLOW_OUTBOX_HEADER 16
#define MLFLOW_OUTBOX_MAX_PAYLOAD (16u << 20)

/* Appends one record and fsyncs the file (and the directory when the file
 * is new). */
mlflow_status mlflow_outbox_append(const char *path, const char *payload,
                                   size_t len, uint32_t points,
                                   mlflow_error *err);

/* Decodes the record at the start of buf. Returns 1 with *payload, *plen,
 * *points and *consumed set; 0 when buf holds less than one whole record
 * (end of data or a torn tail); -1 when the bytes are not a record. */
int mlflow_outbox_decode(const uint8_t *buf, size_t len, const char **payload,
                         size_t *plen, uint32_t *points, size_t *consumed);

/* Replays the records of path from *offset on, each with at most
 * max_retries retries; advances *offset past each accepted record and adds
 * to *batches and *points. MLFLOW_OK when the end was reached (the file is
 * then removed); the send error otherwise. A missing file is MLFLOW_OK. */
mlflow_status mlflow_outbox_replay_from(mlflow_client *c, const char *path,
                                        off_t *offset, int max_retries,
                                        size_t *batches, uint64_t *points,
                                        mlflow_error *err);

/* Number of whole records in the file (0 when missing). */
size_t mlflow_outbox_count(const char *path);

/* POSTs a ready log-batch body. */
mlflow_status mlflow_post_batch_body(mlflow_client *c, const char *body,
                                     size_t len, int max_retries,
                                     mlflow_error *err);

#endif
