"""Where an embedding endpoint's key comes from (issue 47): the environment (OPENAI_API_KEY, the
variable OpenAI's own clients read), or on AWS a Secrets Manager secret
(MEMLAKE_EMBED_API_KEY_SECRET) or an SSM SecureString parameter
(MEMLAKE_EMBED_API_KEY_PARAMETER), read when a request needs it through Powertools' parameters
utility and cached KEY_MAX_AGE seconds, so a rotated key is taken within minutes and the key
never sits in a template parameter or a function's environment.

A key that cannot be read (no such secret, no permission, a parameter that is not there) is an
EmbeddingError retrying cannot help: a write fails with it, as for a bad key, and the operator
fixes the setting. A read the service throttled or failed is retryable: the write stores the
episode with its vectors pending (decision 4702).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from memlake.embed.base import EmbeddingError

#: seconds a key read from Secrets Manager or SSM is kept before it is read again
KEY_MAX_AGE = 300
#: service error codes that say the setting is wrong (not worth retrying)
_SETTING_WRONG = {
    "ResourceNotFoundException",
    "AccessDeniedException",
    "AccessDenied",
    "ParameterNotFound",
    "ParameterVersionNotFound",
    "DecryptionFailure",
    "InvalidParameterException",
    "InvalidRequestException",
    "InvalidKeyId",
    "ValidationException",
}

KeySource = str | Callable[[], str]


def key_source(plain: str, secret: str = "", parameter: str = "") -> KeySource:
    """The key itself (`plain`, "" for none), or a reader of the secret or parameter named."""
    if secret:
        return lambda: _read("secret", secret)
    if parameter:
        return lambda: _read("parameter", parameter)
    return plain


def _read(kind: str, name: str) -> str:
    from aws_lambda_powertools.utilities import parameters
    from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

    where = "Secrets Manager secret" if kind == "secret" else "SSM parameter"
    try:
        if kind == "secret":
            value = parameters.get_secret(name, max_age=KEY_MAX_AGE)
        else:
            value = parameters.get_parameter(name, decrypt=True, max_age=KEY_MAX_AGE)
    except GetParameterError as e:
        code = _error_code(e)
        raise EmbeddingError(
            f"the embedding endpoint's key could not be read from {where} {name!r}: {code or e}",
            hint=f"Check that the {where} exists and that the function may read it.",
            retryable=code not in _SETTING_WRONG,
        ) from e
    key = value.decode() if isinstance(value, bytes) else str(value or "")
    if not key.strip():
        raise EmbeddingError(
            f"the {where} {name!r} holding the embedding endpoint's key is empty",
            hint="Store the API key as the secret's or parameter's plain text value.",
        )
    return key.strip()


def _error_code(error: BaseException) -> str:
    """The service's error code behind Powertools' GetParameterError (its cause's response, or
    the "(Code) when calling" botocore puts in the message it keeps)."""
    for cause in (error.__cause__, error.__context__):
        response = getattr(cause, "response", None)
        if isinstance(response, dict):
            return str(response.get("Error", {}).get("Code", ""))
    found = re.search(r"\((\w+)\) when calling", str(error))
    return found.group(1) if found else ""
