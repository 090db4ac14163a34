"""The one ACL error: a request refused, or an account file that cannot be used."""

from __future__ import annotations


class AclError(Exception):
    """Port of org.apache.rocketmq.acl.common.AclException; the message is the client-facing remark.

    Messages never carry a secret key: they name the access key, the resource and the permission.
    """
