from default.test_cntr import test_cntr
from default.test_cq import test_cq
from default.test_dom import test_dom
from default.test_eq import test_eq
from default.test_recv_cancel import test_recv_cancel
from default.test_shared_ctx import test_shared_ctx
from default.test_sighandler import test_sighandler
