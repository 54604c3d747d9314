"""Access control on the broker, as Apache 4.9.x's plain ACL does it (``aclEnable=true``).

Modules, each one concern:

* ``permission`` -- the permission bits (DENY, ANY, PUB, SUB), the words of the file, the admin-only codes;
* ``addresses`` -- white-address patterns (``*``, ``192.168.0.*``, ``192.168.1.{1,2}``, ranges, IPv6);
* ``plain_file`` -- ``plain_acl.yml`` read and written in Apache's format;
* ``resources`` -- which topics and groups a request needs, per request code, and what its signature covers;
* ``rules`` -- the compiled rules and the check, in Apache's order;
* ``manager`` -- the file, its reloads, its version and the changes admin requests make;
* ``hook`` -- the check in front of the broker's handlers, refusing as Apache's broker refuses.
"""

from broker.acl.errors import AclError
from broker.acl.hook import acl_guarded, acl_guarded_inline
from broker.acl.manager import PlainAclManager
from broker.acl.plain_file import AccountConfig
from broker.acl.rules import AclRules

__all__ = [
    "AccountConfig",
    "AclError",
    "AclRules",
    "PlainAclManager",
    "acl_guarded",
    "acl_guarded_inline",
]
