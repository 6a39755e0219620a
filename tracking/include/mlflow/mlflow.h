/* mlflow/mlflow.h - the whole MLflow client library in one include. */
#ifndef MLFLOW_MLFLOW_H
#define MLFLOW_MLFLOW_H

#include "mlflow/client.h"
#include "mlflow/tracking.h"
#include "mlflow/artifacts.h"
#include "mlflow/registry.h"
#include "mlflow/logged_model.h"
#include "mlflow/logger.h"

#endif
