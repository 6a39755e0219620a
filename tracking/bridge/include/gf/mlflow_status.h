/* mlflow_status.h - the one bridge from the MLflow client's errors
 * (mlflow/client.h) to ganflow's gf_status (gf/status.h), used by the
 * trainer, the server and the CLI alike so that the same failure has the
 * same status everywhere. Built beside tracking/ as its own library
 * (gf_mlflow_status): mlflow_client itself knows nothing of ganflow.
 *
 *   MLFLOW_E_INVALID                          GF_EINVAL
 *   MLFLOW_E_NOMEM                            GF_ENOMEM
 *   MLFLOW_E_NOT_FOUND                        GF_ENOTFOUND
 *   MLFLOW_E_UNSUPPORTED                      GF_EUNSUPPORTED
 *   MLFLOW_E_PROTOCOL, MLFLOW_E_UNSAFE_PATH   GF_EFORMAT (an answer we
 *                                             cannot use or must refuse)
 *   MLFLOW_E_STATE                            GF_ESTATE
 *   MLFLOW_E_CONNECT, _HTTP, _IO, _TIMEOUT,   GF_EIO (the server, the
 *   _FULL, _AUTH                              network or a local file)
 */
#ifndef GF_MLFLOW_STATUS_H
#define GF_MLFLOW_STATUS_H

#include "gf/status.h"
#include "mlflow/client.h"

/* The gf_status for an mlflow_status (GF_OK for MLFLOW_OK). */
gf_status gf_status_from_mlflow(mlflow_status s);

/* Fills err (if non-NULL) with the mapped status and the message
 * "<fmt...>: <me->message>" (just me->message when fmt is NULL); returns
 * the mapped status, never GF_OK (GF_EIO when me says MLFLOW_OK). */
gf_status gf_fail_mlflow(gf_err *err, const mlflow_error *me, const char *fmt,
                         ...) __attribute__((format(printf, 3, 4)));

#endif
