"""ACL 2.0 on the broker, as Apache 5.3+ enforces it (``authenticationEnabled``, ``authorizationEnabled``).

* ``model`` -- users, resources, policy entries and which entry decides a request;
* ``metadata`` -- users and ACLs, durable in ``config/auth.json``, and the admin rules that change them;
* ``request_resources`` -- what each request code needs (resources and actions);
* ``service`` -- authentication and authorization of a request;
* ``hook`` -- the check in front of the handlers, refusing as Apache's broker refuses;
* ``inner_client`` -- the credentials the broker signs its own calls to other brokers with.

With ``aclEnable`` on as well, ACL 2.0 alone gates requests: Apache 5.3+ brokers have no plain-ACL check
left. The plain file still loads and its admin codes (50-54) still answer.
"""

from broker.auth.errors import AuthenticationError, AuthError, AuthorizationError
from broker.auth.hook import auth_guarded, auth_guarded_inline
from broker.auth.metadata import AuthMetadata
from broker.auth.service import AuthService

__all__ = [
    "AuthError",
    "AuthMetadata",
    "AuthService",
    "AuthenticationError",
    "AuthorizationError",
    "auth_guarded",
    "auth_guarded_inline",
]
