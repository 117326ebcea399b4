import Shared
