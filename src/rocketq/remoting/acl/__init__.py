"""ACL: RocketMQ 4.9's plain ACL (plain_acl.yml accounts, HMAC-SHA1 request signatures, per-topic and
per-group permissions, address whitelists), shared by the broker and the NameServer.

Sans-IO apart from reading the account files: the server hook (server_hook.py) plugs the validator into
a RemotingServer, the client side signs through rocketq.remoting.transport.acl_hook. docs/security.md
explains the model.
"""

from rocketq.remoting.acl.errors import AclError
from rocketq.remoting.acl.signing import ACCESS_KEY, SECURITY_TOKEN, SIGNATURE, cal_signature, sign_request

__all__ = ["ACCESS_KEY", "SECURITY_TOKEN", "SIGNATURE", "AclError", "cal_signature", "sign_request"]
